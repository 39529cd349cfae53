package reconciler

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
)

// ErrShuttingDown is the answer to events that arrive after the queue stopped.
var ErrShuttingDown = &Error{Kind: KindRetry, Step: "accept", Err: errors.New("shutting down")}

// Queue takes events from concurrent callers and commits them in arrival order, grouping
// those that arrive together: one commit per event, so the history stays reviewable, and
// one push per group, so a burst costs a few pushes instead of one each. A caller is
// answered only once its event is pushed (or found already in the repository): an answer
// is durable.
type Queue struct {
	Pipeline *Pipeline
	Sink     *GitSink
	// Ledger answers retried event ids; Clusters learns every applied event. Both optional.
	Ledger   *Ledger
	Clusters *Clusters
	// MaxGroup and MaxWait bound a group: at most MaxGroup events, collected for at most
	// MaxWait after the first one (defaults 100 and 20ms).
	MaxGroup int
	MaxWait  time.Duration
	// GroupTimeout bounds a group's commits and push, retries included (default 2m): its
	// events are then answered with a retry, and the client retries with the same id.
	GroupTimeout time.Duration
	// Observe, when set, is called once per answered event (metrics, logs), with the time
	// since it arrived: its wait in the queue counts, as its client waited too. What its
	// group cost is ObserveGroup's.
	Observe func(s Summary, took time.Duration)
	// ObserveGroup, when set, is called once per group, after its push and before its
	// pushed events are answered (so an answered client finds it counted): what the group
	// cost, which per-event counting would multiply by the group's size.
	ObserveGroup func(g GroupStats)
	// Now stamps records; time.Now when nil.
	Now func() time.Time

	in   chan *submission
	done chan struct{}
}

// GroupStats is what one group cost (metrics).
type GroupStats struct {
	// Events is the group's size, events answered without a commit (retried ids) included.
	Events int
	// Pushes counts the pushes that landed: one for a group that committed something, or
	// in review mode one per event committed to its branch.
	Pushes int
	// Retries counts the push attempts beyond the first (the remote moved, or failed
	// transiently) of the pushes that landed or found nothing left to push.
	Retries int
}

type submission struct {
	ctx    context.Context
	ev     *v1alpha1.ClusterEvent
	digest string
	// at stamps the record (Now, which a test may fix); arrived times the answer.
	at      time.Time
	arrived time.Time
	answer  chan Summary
}

// Start prepares the queue; Run must then be called.
func (q *Queue) Start() {
	if q.MaxGroup <= 0 {
		q.MaxGroup = 100
	}
	if q.MaxWait <= 0 {
		q.MaxWait = 20 * time.Millisecond
	}
	if q.GroupTimeout <= 0 {
		q.GroupTimeout = 2 * time.Minute
	}
	if q.Now == nil {
		q.Now = time.Now
	}
	q.in = make(chan *submission, 4*q.MaxGroup)
	q.done = make(chan struct{})
}

// Submit queues an event and waits for its answer. It returns early with a retry Summary
// when ctx ends first; the event may still be committed, which a retry with the same id
// then finds in the Ledger.
func (q *Queue) Submit(ctx context.Context, ev *v1alpha1.ClusterEvent) Summary {
	s := &submission{ctx: ctx, ev: ev, digest: Digest(ev), at: q.Now(), arrived: time.Now(), answer: make(chan Summary, 1)}
	select {
	case <-q.done:
		return Summarize(ev, nil, ErrShuttingDown)
	case q.in <- s:
	case <-ctx.Done():
		return Summarize(ev, nil, stepError("accept", ctx.Err()))
	}
	select {
	case sum := <-s.answer:
		return sum
	case <-q.done:
		// Run stopped: it answered everything it took (and drained the rest), so an answer
		// is either here already or will never come.
		select {
		case sum := <-s.answer:
			return sum
		default:
			return Summarize(ev, nil, ErrShuttingDown)
		}
	case <-ctx.Done():
		return Summarize(ev, nil, stepError("accept", ctx.Err()))
	}
}

// Run processes groups until ctx ends; the group in hand is finished first, and events
// still queued are answered "shutting down" so their clients retry elsewhere.
func (q *Queue) Run(ctx context.Context) {
	defer close(q.done)
	for {
		var first *submission
		select {
		case <-ctx.Done():
			q.drain()
			return
		case first = <-q.in:
		}
		group := []*submission{first}
		timer := time.NewTimer(q.MaxWait)
	collect:
		for len(group) < q.MaxGroup {
			select {
			case s := <-q.in:
				group = append(group, s)
			case <-timer.C:
				break collect
			}
		}
		timer.Stop()
		// The group in hand finishes even when shutdown begins: its clients are waiting. But
		// not forever: a remote that accepts the connection and never answers would hold
		// every client, the readers of the repository and shutdown.
		gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), q.GroupTimeout)
		q.process(gctx, group)
		cancel()
	}
}

// drain answers what is still queued after shutdown began.
func (q *Queue) drain() {
	for {
		select {
		case s := <-q.in:
			s.answer <- Summarize(s.ev, nil, ErrShuttingDown)
		default:
			return
		}
	}
}

// process commits one group: one commit per event, in arrival order (so events of one
// cluster keep their order), and one push. Retried ids are answered from the ledger first.
// In review mode every event goes to a branch of its own, so events are applied one by one.
func (q *Queue) process(ctx context.Context, group []*submission) {
	stats := GroupStats{Events: len(group)}
	var pending []*submission
	digests := map[string]string{}
	for _, s := range group {
		if sum, done := q.early(s, digests); done {
			q.answer(s, sum)
			continue
		}
		pending = append(pending, s)
	}
	if len(pending) == 0 {
		q.observeGroup(stats)
		return
	}
	if q.Sink.ReviewBranch != "" {
		// One push per event, to its own branch: each answered as soon as it is pushed.
		for _, s := range pending {
			out, err := q.Sink.Apply(ctx, q.Pipeline, s.ev)
			stats.add(out, err, true)
			q.answer(s, q.record(s, out, err))
		}
		q.observeGroup(stats)
		return
	}
	events := make([]*v1alpha1.ClusterEvent, len(pending))
	for i, s := range pending {
		events[i] = s.ev
	}
	outs, errs, err := q.Sink.ApplyGroup(ctx, q.Pipeline, events)
	sums := make([]Summary, len(pending))
	for i, s := range pending {
		e := errs[i]
		if err != nil {
			e = err
		}
		sums[i] = q.record(s, outs[i], e)
		stats.add(outs[i], e, false)
	}
	q.observeGroup(stats)
	for i, s := range pending {
		q.answer(s, sums[i])
	}
}

// add counts an event's push into the group's stats. The events of a group share one
// push (and its attempts); with each (review mode), every event has its own.
func (g *GroupStats) add(out *Outcome, err error, each bool) {
	if out == nil || err != nil {
		return
	}
	pushed := 0
	if !out.NoOp() {
		pushed = 1
	}
	retries := max(out.Attempts-1, 0)
	if each {
		g.Pushes += pushed
		g.Retries += retries
		return
	}
	g.Pushes = max(g.Pushes, pushed)
	g.Retries = max(g.Retries, retries)
}

func (q *Queue) observeGroup(g GroupStats) {
	if q.ObserveGroup != nil {
		q.ObserveGroup(g)
	}
}

// early answers an event without committing it: a retried id (from the ledger), an id
// reused with another body (also within the group), or a client that gave up.
func (q *Queue) early(s *submission, digests map[string]string) (Summary, bool) {
	if s.ctx.Err() != nil {
		return Summarize(s.ev, nil, stepError("accept", s.ctx.Err())), true
	}
	if q.Ledger != nil {
		if sum, ok, err := q.Ledger.Lookup(s.ev.ID, s.digest); err != nil {
			return Summarize(s.ev, nil, err), true
		} else if ok {
			// The answer of the first time, marked: nothing was done now.
			sum.Replayed, sum.Timings = true, Timings{}
			return sum, true
		}
	}
	if id := s.ev.ID; id != "" {
		if d, ok := digests[id]; ok && d != s.digest {
			return Summarize(s.ev, nil, &Error{Kind: KindConflict, Step: "accept", Err: fmt.Errorf("event %q: %w", id, ErrIdempotencyConflict)}), true
		}
		digests[id] = s.digest
	}
	return Summary{}, false
}

// record summarises an applied event and remembers it when it succeeded.
func (q *Queue) record(s *submission, out *Outcome, err error) Summary {
	sum := Summarize(s.ev, out, err)
	if err == nil {
		if q.Ledger != nil {
			q.Ledger.Put(s.ev.ID, s.digest, sum)
		}
		if q.Clusters != nil {
			q.Clusters.Observe(s.ev, sum, s.at)
		}
	}
	return sum
}

func (q *Queue) answer(s *submission, sum Summary) {
	if q.Observe != nil {
		q.Observe(sum, time.Since(s.arrived))
	}
	s.answer <- sum
}
