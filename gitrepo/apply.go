package gitrepo

import (
	"context"
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
	// Build is the time spent building the commits and Push the time spent pushing, over
	// all attempts; in a group, both are the group's.
	Build, Push time.Duration
}

// Apply commits changes as one commit and pushes it. Several changes are batched into a
// single commit (later ones win on a shared path). When the remote branch moved, Apply
// fetches and commits the change again on the new head, with backoff, up to
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
	return r.ApplyPlanned(ctx, Planned{Change: c})
}

// ApplyPlanned commits a planned change and pushes it: to Options.Branch, or for a review
// change to its review branch (plan it on BranchSnapshot). When the remote moved, it
// fetches and commits the change again on the new head, with backoff, up to
// Options.MaxAttempts, as long as its plan holds there; otherwise it stops with ErrStale,
// and the caller plans again on the new head. A path of the change that the remote
// changed since the plan's snapshot, to content other than what the change wants, stops
// it with a *ConflictError.
func (r *Repo) ApplyPlanned(ctx context.Context, p Planned) (*Result, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	branch := ""
	if p.review() {
		if p.Branch == "" {
			return nil, fmt.Errorf("%w: review branch: empty", ErrInvalidChange)
		}
		branch = p.Branch
	}
	b, err := r.Begin(ctx, branch)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	ids, err := b.Add(ctx, p)
	if err != nil {
		return nil, err
	}
	if err := b.pushAll(ctx); err != nil {
		res := b.Result(ids[0]).Result
		return &res, err
	}
	g := b.Result(ids[0])
	return &g.Result, g.Err
}

// BranchSnapshot fetches a review branch and returns the Tree a change for it is planned
// on: its head, or the head of Options.Branch while the review branch does not exist.
func (r *Repo) BranchSnapshot(ctx context.Context, branch string) (*Snapshot, error) {
	if branch != "" {
		if err := validBranch(branch); err != nil {
			return nil, fmt.Errorf("%w: branch: %v", ErrInvalidChange, err)
		}
	}
	if err := r.checkReview(&Change{Branch: branch}); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.healIfDamaged(ctx); err != nil {
		return nil, err
	}
	if err := r.fetch(ctx, branch, false); err != nil {
		return nil, err
	}
	var h plumbing.Hash
	err := r.locked(func() (err error) {
		h, err = r.base(target{branch: branch, review: true})
		return r.noteDamage(err)
	})
	if err != nil {
		return nil, err
	}
	return &Snapshot{r: r, commit: h}, nil
}
