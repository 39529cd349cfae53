package gitrepo

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

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

// recoverLocal heals a damaged local clone, once per batch (healed); the caller fetches
// and commits its chain again. Other errors come back unchanged.
func (r *Repo) recoverLocal(ctx context.Context, err error, healed *bool) error {
	var le *localError
	if !errors.As(err, &le) || *healed {
		return err
	}
	*healed = true
	return r.heal(ctx, le.err)
}
