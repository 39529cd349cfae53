package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// Batch is a chain of commits that one writer makes on a branch and pushes at once. Its
// caller plans changes on Tip, adds them (each becomes a local commit on the tip, in
// order), plans again on the new Tip those whose plan no longer held, and pushes. When
// the remote moved, Push fetches and commits the chain again on the new head; the
// changes whose plans no longer hold there come back to the caller to plan again, and
// the rest is pushed. A Batch holds the Repo's writer lock from Begin to Close: other
// writers wait, readers do not.
type Batch struct {
	r      *Repo
	tg     target
	accept func(*Change) error
	// first is the head the batch began on: a path of a change that the remote changed
	// since then, to other content than the change wants, is a conflict, however often
	// the change was planned again.
	first plumbing.Hash
	// base is the remote head the chain is built on, tip the chain's last commit.
	base, tip plumbing.Hash
	jobs      []*job
	// republish are paths whose published parts Push publishes even when no change of
	// the batch touched them (Repo.Publish).
	republish []string
	pk        *packing
	res       Result // attempts and timings
	healed    bool
	closed    bool
}

// target is the branch a chain of commits goes to.
type target struct {
	branch string
	review bool // a review branch: created from Options.Branch when missing
}

// job is one change of a batch and what became of it.
type job struct {
	planned Planned
	// commit is the job's commit in the chain (zero for a no-op).
	commit plumbing.Hash
	// err drops the job from the chain for good: its change is invalid, conflicts, or its
	// plan no longer holds (ErrStale).
	err error
}

// Begin starts a batch on Options.Branch, or with branch set on that review branch (fetched
// first; built on Options.Branch while it does not exist). Close it.
func (r *Repo) Begin(ctx context.Context, branch string) (*Batch, error) {
	b := &Batch{r: r, tg: target{branch: r.opts.Branch}}
	b.accept = func(c *Change) error {
		if c.review() {
			return fmt.Errorf("%w: the batch goes to %q; review branch %q is refused", ErrInvalidChange, r.opts.Branch, c.Branch)
		}
		return nil
	}
	if branch != "" {
		if err := validBranch(branch); err != nil {
			return nil, fmt.Errorf("%w: branch: %v", ErrInvalidChange, err)
		}
		if err := r.checkReview(&Change{Branch: branch}); err != nil {
			return nil, err
		}
		b.tg = target{branch: branch, review: true}
		b.accept = func(c *Change) error {
			if c.Branch != branch {
				return fmt.Errorf("%w: the batch goes to review branch %q, not %q", ErrInvalidChange, branch, c.Branch)
			}
			return nil
		}
	}
	r.mu.Lock()
	if err := b.begin(ctx); err != nil {
		r.mu.Unlock()
		return nil, err
	}
	return b, nil
}

func (b *Batch) begin(ctx context.Context) error {
	r := b.r
	if err := r.healIfDamaged(ctx); err != nil {
		return err
	}
	if b.tg.review {
		if err := r.fetch(ctx, b.tg.branch, false); err != nil {
			return err
		}
	}
	if err := r.locked(func() (err error) { b.first, err = r.base(b.tg); return err }); err != nil {
		return &localError{err}
	}
	b.base, b.tip, b.pk = b.first, b.first, startPacking()
	return nil
}

// Close ends the batch and lets the next writer in. What was not pushed is dropped.
func (b *Batch) Close() {
	if b.closed {
		return
	}
	b.closed = true
	if b.pk != nil {
		b.pk.finish()
	}
	_ = b.r.locked(func() error { b.r.dropPending(); return nil })
	b.r.mu.Unlock()
}

// Branch is where the batch goes.
func (b *Batch) Branch() string { return b.tg.branch }

// Tip is the tree a change added next goes on: the remote head with the batch's commits.
func (b *Batch) Tip() *Snapshot { return &Snapshot{r: b.r, commit: b.tip} }

// Add commits each planned change on the tip, in order, and returns their ids for Result.
// A change already there makes no commit; one that is invalid, conflicts, or whose plan
// no longer holds on the tip (ErrStale) is left out with its own error (see Result). The
// error is the batch's: the local clone failed, or the context ended.
func (b *Batch) Add(ctx context.Context, planned ...Planned) ([]int, error) {
	t0 := time.Now()
	defer func() { b.res.Build += time.Since(t0) }()
	ids := make([]int, len(planned))
	for i := range planned {
		ids[i] = len(b.jobs)
		j := &job{planned: planned[i]}
		b.jobs = append(b.jobs, j)
		if err := b.commit(ctx, j); err != nil {
			if herr := b.heal(ctx, err); herr != nil {
				return nil, herr
			}
		}
	}
	return ids, nil
}

// ChangeResult says what became of one change of a Batch.
type ChangeResult struct {
	// Result holds the change's commit (zero with NoOp when it was already there), the
	// branch, and the batch's push attempts and timings.
	Result
	// Err is the change's own failure: an invalid change (ErrInvalidChange), a
	// *ConflictError, or ErrStale when its plan no longer held. Such a change was left
	// out; the others landed.
	Err error
}

// Result is what became of the change Add gave id: its commit (pushed once Push
// returned without error), or its own error.
func (b *Batch) Result(id int) ChangeResult {
	j := b.jobs[id]
	out := ChangeResult{Result: b.res, Err: j.err}
	out.Branch = b.tg.branch
	if j.err == nil {
		out.Commit, out.NoOp = j.commit, j.commit.IsZero()
	}
	return out
}

// Push pushes the chain. When the remote moved, it fetches, commits the chain again on
// the new head and pushes again, with backoff, up to Options.MaxAttempts in all; it
// never force-pushes. The ids it returns are changes whose plans no longer held on the new
// head: they were left out (ErrStale), nothing was pushed yet, and the caller plans them
// again on Tip, adds them and calls Push again. The error is for the whole batch (the
// remote refused it, or kept moving); then nothing was pushed.
func (b *Batch) Push(ctx context.Context) (stale []int, err error) {
	r := b.r
	var lastErr error
	for {
		if b.tip == b.base && len(b.republish) == 0 {
			return nil, nil // every change was a no-op or left out: nothing to push
		}
		if b.res.Attempts >= r.opts.MaxAttempts {
			return nil, fmt.Errorf("%w (%d attempts): %v", ErrTooManyAttempts, b.res.Attempts, lastErr)
		}
		b.res.Attempts++
		pubs, err := b.publications()
		if err != nil {
			return nil, err
		}
		pack, n := b.pk.finish()
		if n == 0 {
			pack = nil
		}
		b.pk = nil
		var remoteHead plumbing.Hash
		_ = r.locked(func() error { remoteHead, _ = r.head(b.tg.branch); return nil })
		// The clone keeps the pack while the remote receives it: go-git indexes a pack as
		// it is written, which took a third as long as the push, on a core the push leaves
		// idle. A push that fails leaves the pack there unreferenced (as a fetch can), and
		// the chain committed again goes in a pack of its own.
		kept := make(chan error, 1)
		go func() { kept <- r.locked(func() error { return r.keep(pack) }) }()
		t0 := time.Now()
		err = r.push(ctx, plumbing.NewBranchReferenceName(b.tg.branch), remoteHead, b.tip, pack, pubs)
		b.res.Push += time.Since(t0)
		if keepErr := <-kept; keepErr != nil {
			// A clone that cannot keep what it pushed is healed by the next writer; its ref
			// must not lead to objects it lacks.
			_ = r.locked(func() error { return r.noteDamage(&localError{keepErr}) })
		} else if err == nil {
			_ = r.locked(func() error {
				return r.noteDamage(r.store.SetReference(plumbing.NewHashReference(remoteRef(b.tg.branch), b.tip)))
			})
		}
		if err == nil {
			b.base, b.pk = b.tip, startPacking()
			return nil, b.openPullRequest(ctx)
		}
		if permanent(err) {
			b.pk = startPacking()
			return nil, err
		}
		lastErr = err
		if stale, err = b.rebuild(ctx, &lastErr); err != nil || len(stale) > 0 {
			return stale, err
		}
	}
}

// rebuild waits its turn, fetches, and commits every live change again on the new head.
// It returns the changes left out as stale there.
func (b *Batch) rebuild(ctx context.Context, lastErr *error) ([]int, error) {
	r := b.r
	b.pk = startPacking()
	for {
		if b.res.Attempts > 0 {
			if err := r.wait(ctx, b.res.Attempts); err != nil {
				return nil, err
			}
		}
		next, err := r.refresh(ctx, b.tg)
		if err == nil {
			b.base = next
			break
		}
		if herr := r.recoverLocal(ctx, err, &b.healed); herr != nil && permanent(herr) {
			return nil, herr
		}
		*lastErr = err
		if b.res.Attempts++; b.res.Attempts >= r.opts.MaxAttempts {
			return nil, fmt.Errorf("%w (%d attempts): %v", ErrTooManyAttempts, b.res.Attempts, err)
		}
	}
	t0 := time.Now()
	defer func() { b.res.Build += time.Since(t0) }()
	b.tip = b.base
	var stale []int
	for id, j := range b.jobs {
		if j.err != nil {
			continue
		}
		if err := b.commit(ctx, j); err != nil {
			return nil, err
		}
		if errors.Is(j.err, ErrStale) {
			stale = append(stale, id)
		}
	}
	return stale, nil
}

// heal recovers from a damaged local clone once per batch: it fetches again and commits
// the chain again on the new head. Other errors come back unchanged.
func (b *Batch) heal(ctx context.Context, err error) error {
	if err := b.r.recoverLocal(ctx, err, &b.healed); err != nil {
		return err
	}
	b.pk.finish()
	last := err
	// What went stale on the new head is left out with ErrStale, as Result says.
	_, err = b.rebuild(ctx, &last)
	return err
}

// commit commits j's change on the tip, or records why not in j.err. The error is the
// batch's: the local clone failed, or the context ended. Callers hold mu.
func (b *Batch) commit(ctx context.Context, j *job) error {
	r := b.r
	j.commit, j.err = plumbing.ZeroHash, nil
	if err := ctx.Err(); err != nil {
		return err
	}
	c := &j.planned.Change
	if err := c.validate(); err != nil {
		j.err = err
		return nil
	}
	if err := b.accept(c); err != nil {
		j.err = err
		return nil
	}
	var commit plumbing.Hash
	var created []newObject
	err := r.locked(func() error {
		ok, err := r.holds(&j.planned, b.tip)
		switch {
		case errors.Is(err, ErrInvalidChange):
			return err
		case err != nil:
			return &localError{err}
		case !ok:
			return ErrStale
		}
		if err := r.checkConflicts(b.tg.branch, b.first, b.base, c.Files); err != nil {
			return err
		}
		tipTree, err := r.treeOf(b.tip)
		if err != nil {
			return &localError{err}
		}
		tb := &treeBuilder{s: r.store}
		tree, err := tb.apply(tipTree, c.Files)
		if err != nil || tree == tipTree {
			return err
		}
		commit, err = r.commit(tb, tree, b.tip, c.message())
		created = tb.created
		return err
	})
	var le *localError
	switch {
	case errors.Is(err, ErrConflict), errors.Is(err, ErrInvalidChange), errors.Is(err, ErrStale):
		j.err = err
		return nil
	case errors.As(err, &le):
		return err
	case err != nil:
		return &localError{err}
	}
	if !commit.IsZero() {
		j.commit, b.tip = commit, commit
		b.pk.add(created)
	}
	return nil
}

// openPullRequest opens a pull request for a review branch just pushed, when
// Options.PullRequests is set, titled after the last change committed.
func (b *Batch) openPullRequest(ctx context.Context) error {
	if !b.tg.review || b.r.opts.PullRequests == nil {
		return nil
	}
	var last *Change
	for _, j := range b.jobs {
		if j.err == nil && !j.commit.IsZero() {
			last = &j.planned.Change
		}
	}
	if last == nil {
		return nil
	}
	url, err := b.r.opts.PullRequests.OpenPullRequest(ctx, PullRequest{
		Head: b.tg.branch, Base: b.r.opts.Branch, Title: last.Subject, Body: last.message()})
	if err != nil {
		return fmt.Errorf("gitrepo: pushed %s but could not open the pull request: %w", b.tg.branch, err)
	}
	b.res.PullRequestURL = url
	return nil
}
