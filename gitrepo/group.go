package gitrepo

import (
	"context"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
)

// GroupResult says what became of one builder of ApplyGroup.
type GroupResult struct {
	// Result holds the builder's commit (zero with NoOp when its change was already
	// there), the branch, and the group's push attempts.
	Result
	// Err is the builder's own failure: its error, an invalid change (ErrInvalidChange), or
	// a *ConflictError. Such a builder was left out; the others landed.
	Err error
}

// ApplyGroup commits one change per builder, chained in order (builder i sees the tree
// left by builders 0..i-1), and pushes the whole chain at once to Options.Branch: many
// changes cost one push instead of one each. A builder whose change is already there
// makes no commit (NoOp); one that fails, builds an invalid or review change, or conflicts
// with a remote change (the rule of ApplyBuilder) is left out with its own Err while the
// rest land. The builders may be called side by side on several goroutines (see Builder).
// When the remote moved, the whole chain is rebuilt on the new head. The
// returned error is for the group as a whole (authentication, too many attempts, a
// cancelled context, a rejected push); then nothing was pushed.
func (r *Repo) ApplyGroup(ctx context.Context, builders []Builder) ([]GroupResult, error) {
	jobs := make([]*job, len(builders))
	for i, b := range builders {
		jobs[i] = &job{build: b}
		if b == nil {
			jobs[i].err = fmt.Errorf("%w: builders[%d] is nil", ErrInvalidChange, i)
		}
	}
	accept := func(c *Change) error {
		if c.review() {
			return fmt.Errorf("%w: a group goes to %q; review branch %q is refused", ErrInvalidChange, r.opts.Branch, c.Branch)
		}
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.healIfDamaged(ctx); err != nil {
		return nil, err
	}
	var timing Result
	attempts, err := r.run(ctx, target{branch: r.opts.Branch}, jobs, accept, &timing)
	if err != nil {
		return nil, err
	}
	out := make([]GroupResult, len(jobs))
	for i, j := range jobs {
		out[i] = GroupResult{Result: Result{Branch: r.opts.Branch, Attempts: attempts, Build: timing.Build, Push: timing.Push}, Err: j.err}
		if j.err == nil {
			out[i].Commit, out[i].NoOp = j.commit, j.commit == plumbing.ZeroHash
		}
	}
	return out, nil
}
