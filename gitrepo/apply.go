package gitrepo

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
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
	r.mu.Lock()
	defer r.mu.Unlock()

	branch := r.opts.Branch
	review := c.Branch != "" && c.Branch != branch
	if review {
		branch = c.Branch
		if err := r.fetch(ctx, branch, false); err != nil {
			return nil, err
		}
	}
	first, err := r.base(branch, review)
	if err != nil {
		return nil, err
	}
	res := &Result{Branch: branch}
	var lastErr error
	base := first
	for res.Attempts < r.opts.MaxAttempts {
		if res.Attempts > 0 {
			if err := r.wait(ctx, res.Attempts); err != nil {
				return res, err
			}
			next, err := r.refresh(ctx, branch, review)
			if err != nil {
				if permanent(err) {
					return res, err
				}
				lastErr = err
				res.Attempts++
				continue
			}
			base = next
			if err := r.checkConflicts(branch, first, base, c.Files); err != nil {
				return res, err
			}
		}
		res.Attempts++
		baseTree, err := r.treeOf(base)
		if err != nil {
			return res, err
		}
		b := &treeBuilder{s: r.store}
		tree, err := b.apply(baseTree, c.Files)
		if err != nil {
			return res, err
		}
		if tree == baseTree {
			// Nothing to change (or, in review mode, nothing to review): no commit, no push.
			res.NoOp = true
			return res, nil
		}
		remoteHead, _ := r.head(branch)
		commit, err := r.commit(b, tree, base, c.message())
		if err != nil {
			return res, err
		}
		err = r.push(ctx, plumbing.NewBranchReferenceName(branch), remoteHead, commit, b.created)
		if err == nil {
			if err := r.store.SetReference(plumbing.NewHashReference(remoteRef(branch), commit)); err != nil {
				return res, err
			}
			res.Commit = commit
			if review && r.opts.PullRequests != nil {
				url, err := r.opts.PullRequests.OpenPullRequest(ctx, PullRequest{
					Head: branch, Base: r.opts.Branch, Title: c.Subject, Body: c.message()})
				if err != nil {
					return res, fmt.Errorf("gitrepo: pushed %s but could not open the pull request: %w", branch, err)
				}
				res.PullRequestURL = url
			}
			return res, nil
		}
		if permanent(err) {
			return res, err
		}
		lastErr = err
	}
	return res, fmt.Errorf("%w (%d attempts): %v", ErrTooManyAttempts, res.Attempts, lastErr)
}

// refresh fetches the branches a change depends on and returns its new base.
func (r *Repo) refresh(ctx context.Context, branch string, review bool) (plumbing.Hash, error) {
	if err := r.fetch(ctx, r.opts.Branch, true); err != nil {
		return plumbing.ZeroHash, err
	}
	if review {
		if err := r.fetch(ctx, branch, false); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	return r.base(branch, review)
}

// base is the commit a change is built on: the branch head, or for a new review branch
// the head of the main branch.
func (r *Repo) base(branch string, review bool) (plumbing.Hash, error) {
	h, err := r.head(branch)
	if err != nil || !h.IsZero() || !review {
		return h, err
	}
	return r.head(r.opts.Branch)
}

// checkConflicts fails when a path of the change differs between the state the change
// was first built on and the new remote head, unless the remote already holds exactly
// the desired content.
func (r *Repo) checkConflicts(branch string, first, now plumbing.Hash, files map[string][]byte) error {
	if first == now {
		return nil
	}
	t1, err := r.treeOf(first)
	if err != nil {
		return err
	}
	t2, err := r.treeOf(now)
	if err != nil {
		return err
	}
	var paths []string
	for p, want := range files {
		h1, err := blobHash(r.store, t1, p)
		if err != nil {
			return err
		}
		h2, err := blobHash(r.store, t2, p)
		if err != nil {
			return err
		}
		if h1 == h2 {
			continue
		}
		var wantHash plumbing.Hash
		if want != nil {
			wantHash = plumbing.ComputeHash(plumbing.BlobObject, want)
		}
		if h2 != wantHash {
			paths = append(paths, p)
		}
	}
	if len(paths) > 0 {
		sort.Strings(paths)
		return &ConflictError{Branch: branch, Paths: paths}
	}
	return nil
}

// wait sleeps before retry n: exponential backoff with jitter, capped.
func (r *Repo) wait(ctx context.Context, n int) error {
	d := r.opts.Backoff << min(n-1, 16)
	if d > r.opts.MaxBackoff || d <= 0 {
		d = r.opts.MaxBackoff
	}
	d = d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
