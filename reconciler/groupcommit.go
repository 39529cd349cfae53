package reconciler

import (
	"context"
	"sync"
)

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

// groupCommit commits the plans of the reconciles that run together as one chain with one
// push: each member arrives once, with its plans or none, and the last to arrive commits
// for all of them. So a burst of events costs a push per group, not per cluster, and no
// member waits on a timer: a group is the reconciles started together.
type groupCommit struct {
	sink    *GitSink
	observe func(GroupStats)

	mu      sync.Mutex
	missing int
	plans   [][]planFunc
	stats   []GroupStats
	done    chan struct{}
	results [][]committed
	err     error
}

func newGroupCommit(sink *GitSink, members int, observe func(GroupStats)) *groupCommit {
	return &groupCommit{sink: sink, observe: observe, missing: members, plans: make([][]planFunc, members),
		stats: make([]GroupStats, members), done: make(chan struct{}), results: make([][]committed, members)}
}

// commit hands over member's plans, in the order they must be committed, with what the
// member did on its own (stats), and waits for the group's push. Each member calls it
// exactly once, with no plans when it commits nothing.
func (g *groupCommit) commit(ctx context.Context, member int, plans []planFunc, stats GroupStats) ([]committed, error) {
	g.mu.Lock()
	g.plans[member], g.stats[member] = plans, stats
	g.missing--
	last := g.missing == 0
	g.mu.Unlock()
	if last {
		g.run(ctx)
	}
	<-g.done
	return g.results[member], g.err
}

// run commits every member's plans, member after member, and tells the group's cost
// before any member answers its clients, so that an answered client finds it counted.
func (g *groupCommit) run(ctx context.Context) {
	defer close(g.done)
	var all []planFunc
	for _, p := range g.plans {
		all = append(all, p...)
	}
	var total GroupStats
	for _, s := range g.stats {
		total.Events += s.Events
		total.Pushes += s.Pushes
		total.Retries += s.Retries
	}
	defer func() {
		if g.observe != nil {
			g.observe(total)
		}
	}()
	if len(all) == 0 {
		return
	}
	results, err := g.sink.commitPlans(ctx, "", all)
	if err != nil {
		g.err = stepError("push", err)
		return
	}
	pushed := false
	for i, p := range g.plans {
		g.results[i], results = results[:len(p):len(p)], results[len(p):]
		for _, r := range g.results[i] {
			if r.Err == nil {
				pushed = pushed || !r.NoOp
				total.Retries = max(total.Retries, r.Attempts-1)
			}
		}
	}
	if pushed {
		total.Pushes++
	}
}
