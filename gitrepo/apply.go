package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// Result says what an Apply did.
type Result struct {
	// Commit is the pushed commit; zero for a no-op.
	Commit plumbing.Hash
	// Branch is where it was pushed.
	Branch string
	// NoOp is true when the change matched the branch already: nothing was committed or
	// pushed.
	NoOp bool
	// Attempts counts push attempts (1 when nobody raced us).
	Attempts int
	// PullRequestURL is set when a pull request was opened for a review branch.
	PullRequestURL string
	// Build is the time spent building the commits (the builders' own work included) and
	// Push the time spent pushing, over all attempts; in a group, both are the group's.
	Build, Push time.Duration
}

// Apply commits changes as one commit and pushes it. Several changes are batched into a
// single commit (later ones win on a shared path). When the remote branch moved, Apply
// fetches and builds the change again on the new head, with backoff, up to
// Options.MaxAttempts; it never force-pushes. If a path of the change was meanwhile changed
// on the remote to other content, it stops with a *ConflictError instead of overwriting it.
func (r *Repo) Apply(ctx context.Context, changes ...Change) (*Result, error) {
	if len(changes) == 0 {
		return nil, fmt.Errorf("%w: no change", ErrInvalidChange)
	}
	for i := range changes {
		if err := changes[i].validate(); err != nil {
			return nil, err
		}
	}
	c, err := combine(changes)
	if err != nil {
		return nil, err
	}
	return r.ApplyBuilder(ctx, func(Tree) (Change, error) { return c, nil })
}

// ApplyBuilder commits the change b builds and pushes it. b is called on the current head
// (for a review change, on the review branch, or on Options.Branch while the review
// branch does not exist) and again on the new head after every push the remote refused
// because it moved, so content that depends on the repository is recomputed there. A path
// of the change that the remote changed since the first attempt, to content other than
// what the change now wants, stops it with a *ConflictError. The builder's own error is
// returned as is.
func (r *Repo) ApplyBuilder(ctx context.Context, b Builder) (*Result, error) {
	if b == nil {
		return nil, fmt.Errorf("%w: nil builder", ErrInvalidChange)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.healIfDamaged(ctx); err != nil {
		return nil, err
	}
	// Build once on the branch head to learn where the change goes.
	var mainHead plumbing.Hash
	if err := r.locked(func() (err error) { mainHead, err = r.head(r.opts.Branch); return err }); err != nil {
		return nil, &localError{err}
	}
	c, err := b(&Snapshot{r: r, commit: mainHead})
	if errors.Is(err, ErrSkipChange) {
		return &Result{Branch: r.opts.Branch, NoOp: true}, nil
	}
	if err != nil {
		return nil, err
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	tg := target{branch: r.opts.Branch}
	if c.review() {
		if err := r.checkReview(&c); err != nil {
			return nil, err
		}
		tg = target{branch: c.Branch, review: true}
		if err := r.fetch(ctx, tg.branch, false); err != nil {
			return nil, err
		}
	}
	accept := func(n *Change) error {
		if n.review() != tg.review || (tg.review && n.Branch != tg.branch) {
			return fmt.Errorf("%w: the builder changed the change's branch from %q to %q", ErrInvalidChange, c.Branch, n.Branch)
		}
		return nil
	}
	j := &job{build: b, pre: &c, preBase: mainHead}
	res := &Result{Branch: tg.branch}
	res.Attempts, err = r.run(ctx, tg, []*job{j}, accept, res)
	if err != nil {
		return res, err
	}
	if j.err != nil {
		return res, j.err
	}
	res.Commit, res.NoOp = j.commit, j.commit.IsZero()
	if tg.review && !res.NoOp && r.opts.PullRequests != nil {
		url, err := r.opts.PullRequests.OpenPullRequest(ctx, PullRequest{
			Head: tg.branch, Base: r.opts.Branch, Title: j.last.Subject, Body: j.last.message()})
		if err != nil {
			return res, fmt.Errorf("gitrepo: pushed %s but could not open the pull request: %w", tg.branch, err)
		}
		res.PullRequestURL = url
	}
	return res, nil
}
