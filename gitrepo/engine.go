package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// Builder computes a change against the tree it will be committed on. It is called again
// on the new head whenever the remote moved, so content that depends on what the
// repository holds is computed afresh. It runs while the Repo serialises writers: it may
// read base (and the Repo's readers) but must not call Apply, ApplyBuilder, ApplyGroup or
// Fetch. Its change must depend only on what it reads from base, and it must be safe to
// call while the other builders of its group run: ApplyGroup calls the builders of a
// group side by side, on several goroutines, on the branch head, and keeps a change
// built there when the changes committed before it in the chain wrote nothing the
// builder read; otherwise it calls the builder again on the chain's tip. A builder that
// finds nothing to do on base returns ErrSkipChange (wrapped or not): no commit, no error.
type Builder func(base Tree) (Change, error)

// target is the branch a chain of commits goes to.
type target struct {
	branch string
	review bool // a review branch: created from Options.Branch when missing
}

// job is one builder of a chain and what became of it in the last attempt.
type job struct {
	build Builder
	// pre is a change already built on preBase; it saves calling the builder again on
	// the same tree in the first attempt.
	pre     *Change
	preBase plumbing.Hash
	// last is the change last built; commit its commit in the chain (zero for a no-op).
	last   Change
	commit plumbing.Hash
	// err drops the job from the chain for good (its builder failed, its change is
	// invalid or conflicts).
	err error
}

// run commits the jobs as a chain on tg.branch and pushes the chain at once. When the
// remote moved it fetches, rebuilds the chain on the new head, and pushes again, with
// backoff, up to Options.MaxAttempts. accept vets every built change. The error is for
// the whole chain; a job's own failure is in its err. The time spent building and
// pushing is added to timing's Build and Push. Callers hold mu.
func (r *Repo) run(ctx context.Context, tg target, jobs []*job, accept func(*Change) error, timing *Result) (attempts int, err error) {
	var first plumbing.Hash
	if err := r.locked(func() (err error) { first, err = r.base(tg); return err }); err != nil {
		return 0, &localError{err}
	}
	base, healed := first, false
	var lastErr error
	for attempts < r.opts.MaxAttempts {
		if attempts > 0 {
			if err := r.wait(ctx, attempts); err != nil {
				return attempts, err
			}
			next, err := r.refresh(ctx, tg)
			if err != nil {
				if herr := r.recoverLocal(ctx, err, &healed); herr != nil && permanent(herr) {
					return attempts, herr
				}
				lastErr = err
				attempts++
				continue
			}
			base = next
		}
		attempts++
		t0 := time.Now()
		tip, pack, err := r.buildChain(ctx, tg, first, base, jobs, accept)
		timing.Build += time.Since(t0)
		if err != nil {
			if err := r.recoverLocal(ctx, err, &healed); err != nil {
				return attempts, err
			}
			lastErr = errors.New("the local clone was damaged and fetched again")
			continue
		}
		if tip == base {
			return attempts, nil // every change was a no-op or dropped: nothing to push
		}
		var remoteHead plumbing.Hash
		_ = r.locked(func() error { remoteHead, _ = r.head(tg.branch); return nil })
		t0 = time.Now()
		err = r.push(ctx, plumbing.NewBranchReferenceName(tg.branch), remoteHead, tip, pack)
		timing.Push += time.Since(t0)
		if err == nil {
			_ = r.locked(func() error {
				// The push landed; a clone that cannot record it is healed by the next writer.
				return r.noteDamage(r.store.SetReference(plumbing.NewHashReference(remoteRef(tg.branch), tip)))
			})
			return attempts, nil
		}
		if permanent(err) {
			return attempts, err
		}
		lastErr = err
	}
	return attempts, fmt.Errorf("%w (%d attempts): %v", ErrTooManyAttempts, attempts, lastErr)
}

// recoverLocal heals a damaged local clone, once per run; the next attempt fetches and
// rebuilds. Other errors come back unchanged.
func (r *Repo) recoverLocal(ctx context.Context, err error, healed *bool) error {
	var le *localError
	if !errors.As(err, &le) || *healed {
		return err
	}
	*healed = true
	return r.heal(ctx, le.err)
}

// buildChain builds every live job's change on the tip left by the ones before it and
// commits it locally. It returns the last commit (base when nothing changed) and the pack
// of the objects the chain created, written as it goes. Callers hold mu.
func (r *Repo) buildChain(ctx context.Context, tg target, first, base plumbing.Hash, jobs []*job, accept func(*Change) error) (tip plumbing.Hash, pack []byte, err error) {
	tip = base
	pk := startPacking()
	defer func() {
		p, n := pk.finish()
		if err == nil && n > 0 {
			pack = p
		}
	}()
	pb := r.prebuild(base, jobs)
	defer pb.wait()
	var written writeSet // since base
	for i, j := range jobs {
		if j.err != nil {
			continue
		}
		j.commit = plumbing.ZeroHash
		if err := ctx.Err(); err != nil {
			return tip, nil, err
		}
		var c Change
		if j.pre != nil && j.preBase == tip {
			c = *j.pre
		} else {
			var err error
			if p := pb.take(i); p != nil && !written.touches(&p.reads) {
				c, err = p.change, p.err // what the builder would build on tip
			} else {
				c, err = j.build(&Snapshot{r: r, commit: tip})
			}
			if errors.Is(err, ErrSkipChange) {
				continue // a no-op on this tip, as the builder decided
			}
			if err != nil {
				var damaged error
				_ = r.locked(func() error { damaged = r.damaged; return nil })
				if damaged != nil {
					return tip, nil, &localError{damaged}
				}
				j.err = err
				continue
			}
		}
		j.pre = nil
		if err := c.validate(); err != nil {
			j.err = err
			continue
		}
		if err := accept(&c); err != nil {
			j.err = err
			continue
		}
		j.last = c
		var commit plumbing.Hash
		var created []newObject
		var changed []string
		err := r.locked(func() error {
			if err := r.checkConflicts(tg.branch, first, base, c.Files); err != nil {
				return err
			}
			tipTree, err := r.treeOf(tip)
			if err != nil {
				return &localError{err}
			}
			b := &treeBuilder{s: r.store}
			tree, err := b.apply(tipTree, c.Files)
			if err != nil || tree == tipTree {
				return err
			}
			commit, err = r.commit(b, tree, tip, c.message())
			created, changed = b.created, b.changed
			return err
		})
		var le *localError
		switch {
		case errors.Is(err, ErrConflict), errors.Is(err, ErrInvalidChange):
			j.err = err
			continue
		case errors.As(err, &le):
			return tip, nil, err
		case err != nil:
			return tip, nil, &localError{err}
		}
		if commit.IsZero() {
			continue // a no-op on this tip
		}
		j.commit, tip = commit, commit
		written.add(changed)
		pk.add(created)
	}
	return tip, nil, nil
}

// refresh fetches the branches a change depends on and returns its new base.
func (r *Repo) refresh(ctx context.Context, tg target) (plumbing.Hash, error) {
	if err := r.fetch(ctx, r.opts.Branch, true); err != nil {
		return plumbing.ZeroHash, err
	}
	if tg.review {
		if err := r.fetch(ctx, tg.branch, false); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	var h plumbing.Hash
	err := r.locked(func() (err error) { h, err = r.base(tg); return err })
	if err != nil {
		return plumbing.ZeroHash, &localError{err}
	}
	return h, nil
}

// base is the commit a change is built on: the branch head, or for a new review branch
// the head of the main branch. Callers hold st.
func (r *Repo) base(tg target) (plumbing.Hash, error) {
	h, err := r.head(tg.branch)
	if err != nil || !h.IsZero() || !tg.review {
		return h, err
	}
	return r.head(r.opts.Branch)
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
