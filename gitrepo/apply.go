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

// Apply commits static changes as one commit and pushes it: a Batch of one change
// planned on nothing, for a writer whose content does not depend on the repository (an
// operator's edit, a seed). Several changes are batched into a single commit (later ones
// win on a shared path); a review change goes to its review branch. When the remote branch moved, Apply
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
	branch := ""
	if c.review() {
		if c.Branch == "" {
			return nil, fmt.Errorf("%w: review branch: empty", ErrInvalidChange)
		}
		branch = c.Branch
	}
	b, err := r.Begin(ctx, branch)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	ids, err := b.Add(ctx, Planned{Change: c})
	if err != nil {
		return nil, err
	}
	// A change planned on nothing never goes stale: one Push pushes it or fails.
	if _, err := b.Push(ctx); err != nil {
		res := b.Result(ids[0]).Result
		return &res, err
	}
	g := b.Result(ids[0])
	return &g.Result, g.Err
}
