package reconciler

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/magnum-gitops/magnum-gitops/gitrepo"
)

// planFunc plans one change on the tree it is given, which records what the plan reads.
// It returns errNothingToDo when the tree needs no commit (the step's state is not
// there, or was reached already).
type planFunc func(tree gitrepo.Tree) (gitrepo.Change, error)

// maxPushRounds bounds the rounds of planning again after a moved remote, beyond one per
// plan; gitrepo's own Options.MaxAttempts bounds the pushes.
const maxPushRounds = 16

// errNothingToDo: the tree a change was planned on needs no commit from it.
var errNothingToDo = errors.New("nothing to commit on this tree")

// committed is what became of one plan of commitPlans.
type committed struct {
	gitrepo.Result
	// Err is the plan's own failure (its error, an invalid or conflicting change); the
	// others landed.
	Err error
	// Carried is set, with NoOp, when the tree held the plan's event already (errCarried):
	// a retry, answered as the ledger answers one.
	Carried bool
}

// commitPlans plans every change on the branch head (on the review branch, when set),
// side by side, and commits them in order as they are planned (planInOrder), one commit
// each, with one push. A change whose
// plan no longer holds where it would go (a change before it wrote what it read, or
// another writer moved the remote) is planned again on the new tip of the chain: the
// first change still pending always holds there, so the rounds end unless the remote
// keeps moving, which the batch's push attempts bound. The error is for the whole group;
// then nothing was pushed.
func (s *GitSink) commitPlans(ctx context.Context, branch string, plans []planFunc) ([]committed, error) {
	b, err := s.Repo.Begin(ctx, branch)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	out := make([]committed, len(plans))
	ids := make([]int, len(plans)) // each plan's change in the batch; -1 for none
	pending := make([]int, len(plans))
	for i := range pending {
		pending[i] = i
	}
	owner := map[int]int{} // the plan of each change in the batch
	var planning time.Duration
	for round := 1; len(pending) > 0; round++ {
		// Each round commits the first plan still pending, and Push bounds the rounds a
		// moving remote causes; the cap only keeps a defect from looping.
		if round > len(plans)+maxPushRounds {
			return nil, fmt.Errorf("%w: the plans kept going stale", gitrepo.ErrTooManyAttempts)
		}
		var stale []int
		err := planInOrder(b.Tip(), plans, pending, &planning, func(i int, p gitrepo.Planned, err error) error {
			ids[i] = -1
			switch {
			case errors.Is(err, errNothingToDo):
				out[i] = committed{Result: gitrepo.Result{NoOp: true}}
				return nil
			case errors.Is(err, errCarried):
				out[i] = committed{Result: gitrepo.Result{NoOp: true}, Carried: true}
				return nil
			case err != nil:
				out[i] = committed{Err: err}
				return nil
			}
			added, err := b.Add(ctx, p)
			if err != nil {
				return err
			}
			ids[i], owner[added[0]] = added[0], i
			if errors.Is(b.Result(added[0]).Err, gitrepo.ErrStale) {
				stale = append(stale, i)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		pending = append(pending[:0], stale...)
		if len(pending) > 0 {
			continue // planned again on the tip before anything is pushed
		}
		moved, err := b.Push(ctx)
		if err != nil {
			return nil, err
		}
		for _, id := range moved {
			pending = append(pending, owner[id])
		}
	}
	for i, id := range ids {
		if id >= 0 {
			r := b.Result(id)
			out[i] = committed{Result: r.Result, Err: r.Err}
		}
		out[i].Branch = b.Branch()
		out[i].Build += planning
	}
	return out, nil
}

// planInOrder plans plans[i] for each i of pending on its own recording of tip, side by
// side on as many goroutines as the Go runtime runs at once, and hands each plan to add in
// pending's order as soon as it and those before it are planned. Planning (reading,
// rendering, encrypting what changed) is most of what committing a group costs, the plans
// of different clusters read different files, and committing is one after the other: the
// first changes are committed while the later ones are still being planned. waited adds
// up the time spent waiting for a plan. An error from add ends the round; the plans still
// running are waited for, none started after.
func planInOrder(tip *gitrepo.Snapshot, plans []planFunc, pending []int, waited *time.Duration, add func(i int, p gitrepo.Planned, err error) error) error {
	type result struct {
		planned gitrepo.Planned
		err     error
		done    chan struct{}
	}
	results := make([]result, len(pending))
	for k := range results {
		results[k].done = make(chan struct{})
	}
	var next atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(pending)) {
		wg.Go(func() {
			for k := int(next.Add(1)) - 1; k < len(pending) && !stop.Load(); k = int(next.Add(1)) - 1 {
				on := tip.Recording()
				c, err := plans[pending[k]](on)
				results[k].planned, results[k].err = gitrepo.Planned{Change: c, On: on}, err
				close(results[k].done)
			}
		})
	}
	defer wg.Wait()
	defer stop.Store(true)
	for k, i := range pending {
		t0 := time.Now()
		<-results[k].done
		*waited += time.Since(t0)
		if err := add(i, results[k].planned, results[k].err); err != nil {
			return err
		}
	}
	return nil
}

// commitPlan is commitPlans for one change.
func (s *GitSink) commitPlan(ctx context.Context, branch string, plan planFunc) (*committed, error) {
	res, err := s.commitPlans(ctx, branch, []planFunc{plan})
	if err != nil {
		return nil, err
	}
	return &res[0], res[0].Err
}
