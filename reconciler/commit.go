package reconciler

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"golang.org/x/sync/errgroup"

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
// side by side, and commits them in order, one commit each, with one push. A change whose
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
		t0 := time.Now()
		planned, errs := planSideBySide(b.Tip(), plans, pending)
		planning += time.Since(t0)
		var add []gitrepo.Planned
		var adding []int
		for k, i := range pending {
			ids[i] = -1
			switch {
			case errors.Is(errs[k], errNothingToDo):
				out[i] = committed{Result: gitrepo.Result{NoOp: true}}
			case errors.Is(errs[k], errCarried):
				out[i] = committed{Result: gitrepo.Result{NoOp: true}, Carried: true}
			case errs[k] != nil:
				out[i] = committed{Err: errs[k]}
			default:
				add, adding = append(add, planned[k]), append(adding, i)
			}
		}
		added, err := b.Add(ctx, add...)
		if err != nil {
			return nil, err
		}
		pending = pending[:0]
		for k, i := range adding {
			ids[i], owner[added[k]] = added[k], i
			if errors.Is(b.Result(added[k]).Err, gitrepo.ErrStale) {
				pending = append(pending, i)
			}
		}
		if len(pending) > 0 {
			continue // planned again on the tip before anything is pushed
		}
		stale, err := b.Push(ctx)
		if err != nil {
			return nil, err
		}
		for _, id := range stale {
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

// planSideBySide plans plans[i] for each i of pending on its own recording of tip, on
// as many goroutines as the Go runtime runs at once: planning (reading, rendering,
// encrypting what changed) is most of what committing a group costs, and the plans of
// different clusters read different files.
func planSideBySide(tip *gitrepo.Snapshot, plans []planFunc, pending []int) ([]gitrepo.Planned, []error) {
	planned := make([]gitrepo.Planned, len(pending))
	errs := make([]error, len(pending))
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for k, i := range pending {
		g.Go(func() error {
			on := tip.Recording()
			c, err := plans[i](on)
			planned[k], errs[k] = gitrepo.Planned{Change: c, On: on}, err
			return nil
		})
	}
	_ = g.Wait()
	return planned, errs
}

// commitPlan is commitPlans for one change.
func (s *GitSink) commitPlan(ctx context.Context, branch string, plan planFunc) (*committed, error) {
	res, err := s.commitPlans(ctx, branch, []planFunc{plan})
	if err != nil {
		return nil, err
	}
	return &res[0], res[0].Err
}
