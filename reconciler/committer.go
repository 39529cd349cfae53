package reconciler

import (
	"context"
	"slices"
	"sync"
)

// groupStats is what one group, or one reconcile of it, cost (Report says what each is).
type groupStats struct{ Events, Pushes, Retries int }

// committer commits the plans of a group of reconciles as one chain with one push. A
// reconcile hands its plans over (submit) and waits on the future it gets back; it never
// waits for another reconcile, nor runs another's commit. The committer owns the batching
// (a batch is the group's reconciles: it commits once each has handed its plans over, so a
// burst of events costs a push per group, not per cluster, and nobody waits on a timer),
// the planning again on a moved remote (GitSink.commitPlans) and the push.
type committer struct {
	sink *GitSink
	// stats is what the group cost, set before any future resolves.
	stats groupStats

	mu      sync.Mutex
	batch   []submission
	missing int
	ready   chan struct{} // closed when the last member handed its plans over
}

// submission is one reconcile's plans, in the order they must be committed, with what the
// reconcile did on its own (stats), and the future its results go to.
type submission struct {
	member int // the reconcile's place in its group: the order clusters arrived in
	plans  []planFunc
	stats  groupStats
	future *future
}

// future is the outcome of a submission: results, one per plan, or the group's error.
type future struct {
	done    chan struct{}
	results []committed
	err     error
}

// wait blocks until the submission's batch is committed (or failed).
func (f *future) wait() ([]committed, error) {
	<-f.done
	return f.results, f.err
}

func (f *future) resolve(results []committed, err error) {
	f.results, f.err = results, err
	close(f.done)
}

// newCommitter starts a committer for a group of members reconciles and commits their
// batch, on its own goroutine, once each has submitted.
func newCommitter(ctx context.Context, sink *GitSink, members int) *committer {
	c := &committer{sink: sink, missing: members, ready: make(chan struct{})}
	if members == 0 {
		close(c.ready)
	}
	go c.run(ctx)
	return c
}

// submit hands the plans of the group's member-th reconcile over, none when it commits
// nothing; each member of the group submits exactly once.
func (c *committer) submit(member int, plans []planFunc, stats groupStats) *future {
	f := &future{done: make(chan struct{})}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.batch = append(c.batch, submission{member: member, plans: plans, stats: stats, future: f})
	if c.missing--; c.missing == 0 {
		close(c.ready)
	}
	return f
}

// run commits the batch once it is complete, member after member (the order the clusters'
// operations arrived in, which the history keeps, whatever order the reconciles ended in),
// and sets the group's cost before any future resolves. Every reconcile of the group submits, whatever became of it, so the
// batch completes; a context that ended meanwhile fails the push, and so every future.
func (c *committer) run(ctx context.Context) {
	<-c.ready
	batch := c.batch
	if len(batch) == 0 {
		return // a group of no reconcile: nothing to commit or tell
	}
	slices.SortFunc(batch, func(a, b submission) int { return a.member - b.member })
	var all []planFunc
	var total groupStats
	for _, s := range batch {
		all = append(all, s.plans...)
		total.Events += s.stats.Events
		total.Pushes += s.stats.Pushes
		total.Retries += s.stats.Retries
	}
	var results []committed
	var err error
	if len(all) > 0 {
		if results, err = c.sink.commitPlans(ctx, "", all); err != nil {
			err = stepError("push", err)
		}
	}
	out := make([][]committed, len(batch))
	pushed := false
	for i, s := range batch {
		if err != nil {
			continue
		}
		out[i], results = results[:len(s.plans):len(s.plans)], results[len(s.plans):]
		for _, r := range out[i] {
			if r.Err == nil {
				pushed = pushed || !r.NoOp
				total.Retries = max(total.Retries, r.Attempts-1)
			}
		}
	}
	if pushed {
		total.Pushes++
	}
	c.stats = total
	for i, s := range batch {
		s.future.resolve(out[i], err)
	}
}
