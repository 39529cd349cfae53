package reconciler

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/generator"
)

// errShuttingDown is the answer to events that arrive after the reconciler stopped.
var errShuttingDown = &failure{Kind: KindRetry, Step: "accept", Err: errors.New("shutting down")}

// Reconciler brings each cluster's directory in Git to what Magnum asked of it, the way a
// Flux or Cluster API controller reconciles an object. Event sources (the HTTP API, the
// Magnum poller) only record a cluster's operation and queue its UUID (Submit); Run takes
// the queued clusters together and reconciles them (Reconcile). Each Magnum operation is
// its own commit, so the history stays reviewable and a retry finds its id in a trailer;
// the clusters reconciled together share one push, so a burst costs a few pushes instead
// of one each. A client is answered only once its operation is pushed (or found already in
// the repository): an answer is durable.
type Reconciler struct {
	Pipeline *Pipeline
	Sink     *GitSink
	// Clusters learns every applied event; optional, but ReadHistory needs it.
	Clusters *Clusters
	// MaxGroup and MaxWait bound a group: clusters with at most MaxGroup operations
	// together (one cluster at least), collected for at most MaxWait after the first one
	// (defaults 100 and 20ms; defaultMaxGroup says why 100).
	MaxGroup int
	MaxWait  time.Duration
	// GroupTimeout bounds a group's commits and push, retries included (default 2m): its
	// operations are then answered with a retry, and the client retries with the same id.
	GroupTimeout time.Duration
	// Reports, when set, receives each group's Report once its clients are answered: what
	// the caller (serve) does beyond the answers (asks Flux to fetch, counts, tells
	// Kubernetes) it reads there; the Reconciler calls nothing of the caller's.
	Reports chan<- Report
	// Now stamps records; time.Now when nil.
	Now func() time.Time
	// Management, when set, is the reconciler's view of the management clusters: what the
	// observe step reads to take a deleted cluster through the phases of its delete
	// (delete.go) and an upgrade chain through its steps (upgrade.go).
	Management Management

	desired *desired
	done    chan struct{}
	// ledger answers retried event ids; follower reads the commits of the other replicas
	// into it and into Clusters. ReadHistory sets both; without it, a retry is told from
	// Git alone (checkReusedID, carried), and CatchUp refuses.
	ledger   *ledger
	follower *follower
	// removals are the commits that removed deleted clusters' Secret files, by UUID, until
	// their delete is done (delete.go).
	removals sync.Map
}

// defaultMaxGroup bounds a group's operations unless MaxGroup says otherwise: enough that a
// burst, or a new chart version rolling through a fleet, costs few pushes; few enough that
// a group's changes stay a small part of serve's memory.
const defaultMaxGroup = 100

// Start prepares the reconciler; Run must then be called.
func (r *Reconciler) Start() {
	if r.MaxGroup <= 0 {
		r.MaxGroup = defaultMaxGroup
	}
	if r.MaxWait <= 0 {
		r.MaxWait = 20 * time.Millisecond
	}
	if r.GroupTimeout <= 0 {
		r.GroupTimeout = 2 * time.Minute
	}
	if r.Now == nil {
		r.Now = time.Now
	}
	r.desired = newDesired()
	r.done = make(chan struct{})
}

// Submit records an operation of a cluster, queues the cluster and waits for the answer.
// It returns early with a retry Summary when ctx ends first; the operation may still be
// committed, which a retry with the same id then finds in the ledger.
func (r *Reconciler) Submit(ctx context.Context, ev *v1alpha1.ClusterEvent) Summary {
	op := &operation{ctx: ctx, ev: ev, digest: eventDigest(ev), at: r.Now(), arrived: time.Now(), answer: make(chan Summary, 1)}
	if !r.desired.put(op) {
		return NewSummary(ev, nil, errShuttingDown)
	}
	select {
	case sum := <-op.answer:
		return sum
	case <-r.done:
		// Run stopped: it answered every operation it took or left, so an answer is here
		// already.
		return <-op.answer
	case <-ctx.Done():
		return NewSummary(ev, nil, stepError("accept", ctx.Err()))
	}
}

// SubmitAll submits events together and waits for each one's answer, in order. They are
// queued at once, so that a Reconciler whose MaxGroup holds them all reconciles them as one
// group, in one push: migrate commits its batches so.
func (r *Reconciler) SubmitAll(ctx context.Context, events []*v1alpha1.ClusterEvent) []Summary {
	ops := make([]*operation, len(events))
	for i, ev := range events {
		ops[i] = &operation{ctx: ctx, ev: ev, digest: eventDigest(ev), at: r.Now(), arrived: time.Now(), answer: make(chan Summary, 1)}
	}
	sums := make([]Summary, len(events))
	r.submitAll(ctx, ops, sums)
	return sums
}

// Requeue queues clusters to be reconciled with no operation of their own, without
// waiting: a level trigger, like a controller's periodic resync, by which the leader takes
// deleted clusters through their delete (delete.go). A cluster queued already is not
// queued again.
func (r *Reconciler) Requeue(uuids ...string) {
	r.desired.requeue(uuids...)
}

// Resync queues the resync of clusters (records found by Pipeline.ResyncRecords), each an
// operation of its cluster: its reconcile renders the record again and commits what moved,
// with the cluster's waiting events, MaxGroup to a push. It waits for them all and returns
// each one's summary, in order; Run must be running.
func (r *Reconciler) Resync(ctx context.Context, records []*ResyncRecord) []Summary {
	sums := make([]Summary, len(records))
	ops := make([]*operation, len(records))
	for i, rec := range records {
		if rec == nil || rec.Event == nil {
			sums[i] = NewSummary(nil, nil, &failure{Kind: KindInvalid, Step: "accept", Err: errors.New("resync: no record")})
			continue
		}
		ops[i] = &operation{ctx: ctx, ev: rec.Event, resync: rec, at: r.Now(), arrived: time.Now(), answer: make(chan Summary, 1)}
	}
	r.submitAll(ctx, ops, sums)
	return sums
}

// ResyncOptions are the options of a resync whose records r reconciles (Resync): batches
// of r.MaxGroup, two in flight, so that the next group already waits in r's queue while
// one is planned and committed, and r is not idle between groups. A record that does not decode, or that its reconcile refuses as invalid input
// (it decodes but does not render), is told to refused and left as Git holds it; every
// other answer (a commit, nothing to do, another error) is told to each. refused and each
// are called one at a time. The resync stops when its context ends.
func (r *Reconciler) ResyncOptions(refused func(record string, err error), each func(rec *ResyncRecord, sum Summary)) ResyncOptions {
	var mu sync.Mutex
	o := ResyncOptions{Batch: r.MaxGroup, InFlight: 2,
		Queue: func(ctx context.Context, records []*ResyncRecord) error {
			sums := r.Resync(ctx, records)
			mu.Lock()
			defer mu.Unlock()
			for i, sum := range sums {
				if sum.Err() != nil && sum.Kind() == KindInvalid && refused != nil {
					refused(records[i].Path, sum.Err())
					continue
				}
				each(records[i], sum)
			}
			return ctx.Err()
		}}
	if refused != nil {
		o.Refused = func(record string, err error) {
			mu.Lock()
			defer mu.Unlock()
			refused(record, err)
		}
	}
	return o
}

// submitAll queues ops (nil ones skipped) at once and waits for their answers, into sums.
func (r *Reconciler) submitAll(ctx context.Context, ops []*operation, sums []Summary) {
	if !r.desired.put(ops...) {
		for i, op := range ops {
			if op != nil {
				sums[i] = NewSummary(op.ev, nil, errShuttingDown)
			}
		}
		return
	}
	r.wait(ctx, ops, sums)
}

// wait waits for each operation's answer (nil ones skipped), into sums.
func (r *Reconciler) wait(ctx context.Context, ops []*operation, sums []Summary) {
	for i, op := range ops {
		if op == nil {
			continue
		}
		select {
		case sums[i] = <-op.answer:
		case <-r.done:
			sums[i] = <-op.answer
		case <-ctx.Done():
			sums[i] = NewSummary(op.ev, nil, stepError("accept", ctx.Err()))
		}
	}
}

// Run reconciles the queued clusters until ctx ends: a group at a time, made of the
// clusters queued within MaxWait of the first. The group in hand is finished first;
// operations still waiting are answered "shutting down" so their clients retry elsewhere.
func (r *Reconciler) Run(ctx context.Context) {
	defer close(r.done)
	for {
		select {
		case <-ctx.Done():
			for _, op := range r.desired.close() {
				r.answer(op, NewSummary(op.ev, nil, errShuttingDown))
			}
			return
		case <-r.desired.ready:
		}
		r.collect()
		uuids := r.desired.take(r.MaxGroup)
		if len(uuids) == 0 {
			continue
		}
		// The group in hand finishes even when shutdown begins: its clients are waiting. But
		// not forever: a remote that accepts the connection and never answers would hold
		// every client, the readers of the repository and shutdown.
		gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.GroupTimeout)
		rep := r.Reconcile(gctx, uuids...)
		cancel()
		if r.Reports != nil {
			select {
			case r.Reports <- rep:
			case <-ctx.Done(): // the caller may have stopped reading
			}
		}
	}
}

// collect waits until MaxWait has passed since the first operation of a group arrived, or
// until MaxGroup operations wait.
func (r *Reconciler) collect() {
	timer := time.NewTimer(r.MaxWait)
	defer timer.Stop()
	for r.desired.pending() < r.MaxGroup {
		select {
		case <-timer.C:
			return
		case <-r.desired.ready:
		}
	}
}

// Reconcile reconciles clusters together: each one's prologue, steps and summary
// (steps.go), their configured branch's commits in one push by one committer; it returns
// what they did beyond answering their clients.
func (r *Reconciler) Reconcile(ctx context.Context, uuids ...string) Report {
	g := newCommitter(ctx, r.Sink, len(uuids))
	seen := map[string]string{} // event id → digest, for the group
	scopes := make([]*scope, len(uuids))
	for i, uuid := range uuids {
		scopes[i] = r.load(uuid, i, g, seen)
	}
	var wg sync.WaitGroup
	for _, sc := range scopes {
		wg.Go(func() { r.reconcile(ctx, sc) })
	}
	wg.Wait()
	rep := Report{Events: g.stats.Events, Pushes: g.stats.Pushes, Retries: g.stats.Retries, Results: make([]Result, 0, len(scopes))}
	for _, sc := range scopes {
		if sc.result.ClusterUUID != "" {
			rep.Results = append(rep.Results, sc.result)
		}
	}
	return rep
}

// load is a reconcile's prologue: it claims the cluster's waiting operations, derives
// those a Magnum view asks for (derive), and answers at once those with nothing to
// commit: an id Git already carries (from the ledger), an id reused with another body
// (also within the group, seen), a client that gave up, a derived event refused.
func (r *Reconciler) load(uuid string, member int, g *committer, seen map[string]string) *scope {
	sc := &scope{uuid: uuid, member: member, group: g}
	claimed := r.desired.claim(uuid)
	for _, op := range claimed {
		if op.view == nil {
			sc.ops = append(sc.ops, op)
			continue
		}
		sc.ops = append(sc.ops, r.derive(op)...)
	}
	// Magnum's view, held by Git already, asks nothing more: the leader's requeue
	// observes deletes and upgrades, not every poll of every cluster.
	sc.settled = len(claimed) > 0 && len(sc.ops) == 0
	sc.answered = make([]bool, len(sc.ops))
	sc.outs = make([]*Written, len(sc.ops))
	sc.errs = make([]error, len(sc.ops))
	for i, op := range sc.ops {
		if op.resync == nil {
			sc.stats.Events++
		}
		if sum, done := r.early(op, seen); done {
			r.answer(op, sum)
			sc.answered[i], sc.errs[i] = true, sum.Err()
		}
	}
	return sc
}

// render is the render step of one operation, timed.
func (r *Reconciler) render(ctx context.Context, ev *v1alpha1.ClusterEvent, out *Written) (*generator.Result, error) {
	t0 := time.Now()
	res, err := r.Pipeline.Render(ctx, ev)
	out.Timings.Render = time.Since(t0)
	return res, err
}

// summarize is a reconcile's one summary: a reconcile that did not reach its commit step
// hands the committer nothing, so that its group commits; each operation not answered in
// the prologue is summarised, remembered when it landed (the ledger, the cluster index)
// and answered; what the caller hears of beyond the answers goes to the scope's Result.
func (r *Reconciler) summarize(sc *scope) {
	if !sc.submitted {
		sc.group.submit(sc.member, nil, sc.stats)
	}
	for i, op := range sc.ops {
		if sc.answered[i] {
			continue
		}
		if o := sc.outs[i]; o != nil && o.Carried && sc.errs[i] == nil {
			r.answer(op, r.carried(op))
			continue
		}
		sum := NewSummary(op.ev, sc.outs[i], sc.errs[i])
		if sc.errs[i] == nil && op.resync == nil {
			if r.ledger != nil {
				r.ledger.Put(op.ev.ID, op.digest, sum)
			}
			if r.Clusters != nil {
				r.Clusters.Observe(op.ev, sum, op.at)
			}
		}
		r.answer(op, sum)
	}
	if d := sc.del; d != nil && (d.progress.Commit != "" || d.progress.Err != nil) {
		sc.result.Delete = &d.progress
	}
	if u := sc.up; u != nil && (u.progress.Commit != "" || u.progress.Err != nil) {
		sc.result.Upgrade = &u.progress
	}
	if len(sc.result.Pushed) > 0 || sc.result.Delete != nil || sc.result.Upgrade != nil {
		sc.result.ClusterUUID = sc.uuid
	}
}

// early answers an operation without committing it: a client that gave up, a derived
// event refused, a retried id or an id reused with another body (replayed, ledger.go).
func (r *Reconciler) early(op *operation, seen map[string]string) (Summary, bool) {
	if op.ctx.Err() != nil {
		return NewSummary(op.ev, nil, stepError("accept", op.ctx.Err())), true
	}
	if op.refused != nil {
		return NewSummary(op.ev, nil, op.refused), true
	}
	if op.resync != nil {
		return Summary{}, false // the record's event id is in the ledger: it is not a retry
	}
	return r.replayed(op, seen)
}

func (r *Reconciler) answer(op *operation, sum Summary) {
	sum.Timings.Answer = time.Since(op.arrived)
	op.answer <- sum
}
