package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage"
)

// Repo is a bare clone of one remote branch that changes are committed to. Its methods
// are safe for concurrent use: writers (a Batch from Begin to Close, Apply, Fetch) run one
// at a time, and readers (Head, ReadFile, ListDir, ListFiles, Snapshot, Walk) only wait
// for the short moments a writer touches the local object store, not for its pushes.
type Repo struct {
	opts Options
	ep   *transport.Endpoint
	auth transport.AuthMethod

	// mu serialises writers.
	mu sync.Mutex
	// st guards every use of store and repo: go-git's object stores are not safe for a
	// read during a write (nor, on disk, for two reads). store and repo are only replaced
	// with both mu and st held.
	st    sync.Mutex
	store storage.Storer
	repo  *git.Repository
	// lineage numbers the branch's recent first-parent history for Contains (under st).
	lineage lineage
	// damaged is set (under st) by a reader that found the local clone unreadable; the
	// next writer discards the clone and fetches it again.
	damaged error
	// published is what the remote's published branches (Split) held at the last push,
	// as far as it saw them (under mu): a part already there is not built again.
	published map[plumbing.ReferenceName]plumbing.Hash
	// publishedIDs remembers published commits' ids by tree and part (under st).
	publishedIDs map[publishedKey]plumbing.Hash
}

// Open clones the remote branch (or reuses and fetches the clone in Options.CacheDir,
// discarding it when it is damaged). An empty remote repository is fine: the first Apply
// creates the branch.
func Open(ctx context.Context, opts Options) (*Repo, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	ep, err := transport.NewEndpoint(opts.URL)
	if err != nil {
		return nil, err
	}
	auth, err := opts.Auth.authMethod(ep, opts.authRefused())
	if err != nil {
		return nil, err
	}
	r := &Repo{opts: opts, ep: ep, auth: auth}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.load(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// locked runs f with the object store to itself.
func (r *Repo) locked(f func() error) error {
	r.st.Lock()
	defer r.st.Unlock()
	return f()
}

func remoteRef(branch string) plumbing.ReferenceName {
	return plumbing.NewRemoteReferenceName("origin", branch)
}

// fetch updates the remote-tracking ref of a branch. A missing branch is an error only
// when required and the remote has other branches. Callers hold mu.
func (r *Repo) fetch(ctx context.Context, branch string, required bool) error {
	spec := config.RefSpec(fmt.Sprintf("+refs/heads/%s:%s", branch, remoteRef(branch)))
	err := r.locked(func() error {
		opts := &git.FetchOptions{RemoteName: "origin", RefSpecs: []config.RefSpec{spec}, Auth: r.auth, Force: true}
		if _, err := r.store.Reference(remoteRef(r.opts.Branch)); r.opts.History.Commits > 0 && errors.Is(err, plumbing.ErrReferenceNotFound) {
			// The clone's first fetch: only then does History bound it. A later fetch with
			// a depth would move the boundary up to the new head.
			return r.fetchHistory(ctx, opts)
		}
		return r.repo.FetchContext(ctx, opts)
	})
	switch {
	case err == nil, errors.Is(err, git.NoErrAlreadyUpToDate):
		return nil
	case errors.Is(err, transport.ErrEmptyRemoteRepository):
		return nil
	case isNoMatchingRef(err):
		if required {
			if refs, lerr := r.remoteRefs(ctx); lerr == nil && len(refs) > 0 {
				return fmt.Errorf("%w: %s", ErrBranchNotFound, branch)
			}
		}
		return nil
	case isStoreDamage(err):
		return &localError{err}
	}
	return classify(err)
}

func isNoMatchingRef(err error) bool {
	var nm git.NoMatchingRefSpecError
	return errors.As(err, &nm) || strings.Contains(err.Error(), "couldn't find remote ref")
}

// remoteRefs lists the remote's branches.
func (r *Repo) remoteRefs(ctx context.Context) ([]*plumbing.Reference, error) {
	rem := git.NewRemote(nil, &config.RemoteConfig{Name: "origin", URLs: []string{r.opts.URL}})
	refs, err := rem.ListContext(ctx, &git.ListOptions{Auth: r.auth})
	if err != nil && !errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return nil, classify(err)
	}
	var out []*plumbing.Reference
	for _, ref := range refs {
		if ref.Name().IsBranch() {
			out = append(out, ref)
		}
	}
	return out, nil
}

// classify maps transport errors to the package's sentinel errors.
func classify(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, transport.ErrAuthenticationRequired), errors.Is(err, transport.ErrAuthorizationFailed):
		return fmt.Errorf("%w: %v", ErrAuthentication, err)
	case errors.Is(err, transport.ErrRepositoryNotFound):
		return fmt.Errorf("%w: %v", ErrRepositoryNotFound, err)
	}
	return fmt.Errorf("gitrepo: %w", err)
}

// permanent reports errors that retrying cannot fix.
func permanent(err error) bool {
	return errors.Is(err, ErrAuthentication) || errors.Is(err, ErrRepositoryNotFound) ||
		errors.Is(err, ErrBranchNotFound) || errors.Is(err, ErrConflict) || errors.Is(err, ErrInvalidChange) ||
		errors.Is(err, ErrPushRejected) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// head returns the last known commit of a remote branch (ZeroHash if it has none).
// Callers hold st.
func (r *Repo) head(branch string) (plumbing.Hash, error) {
	ref, err := r.store.Reference(remoteRef(branch))
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return plumbing.ZeroHash, nil
	}
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return ref.Hash(), nil
}

// treeOf returns a commit's tree (ZeroHash for none). Callers hold st.
func (r *Repo) treeOf(commit plumbing.Hash) (plumbing.Hash, error) {
	if commit.IsZero() {
		return plumbing.ZeroHash, nil
	}
	c, err := object.GetCommit(r.store, commit)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return c.TreeHash, nil
}

// Fetch brings the branch up to date with the remote.
func (r *Repo) Fetch(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.healIfDamaged(ctx); err != nil {
		return err
	}
	err := r.fetch(ctx, r.opts.Branch, true)
	var le *localError
	if errors.As(err, &le) {
		return r.heal(ctx, le.err)
	}
	return err
}

// fetchHistory is a clone's first fetch when Options.History bounds it: the newest
// History.Commits commits, then four times as many while the oldest held is younger than
// History.Since, up to History.MaxCommits. Callers hold st.
func (r *Repo) fetchHistory(ctx context.Context, opts *git.FetchOptions) error {
	h := r.opts.History
	since := r.opts.Now().Add(-h.Since)
	for opts.Depth = h.Commits; ; opts.Depth = min(4*opts.Depth, h.MaxCommits) {
		err := r.repo.FetchContext(ctx, opts)
		if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
			return err
		}
		if h.Since <= 0 || opts.Depth >= h.MaxCommits {
			return err
		}
		young, serr := r.boundaryYoungerThan(since)
		if serr != nil {
			return serr
		}
		if !young { // the whole history, or old enough
			return err
		}
	}
}

// boundaryYoungerThan reports whether a commit at the clone's shallow boundary (a commit
// whose parent it does not hold) was committed after t. go-git keeps a deepened clone's
// former boundary commits listed as shallow, so the list alone does not say where the
// history held ends. Callers hold st.
func (r *Repo) boundaryYoungerThan(t time.Time) (bool, error) {
	shallow, err := r.store.Shallow()
	if err != nil {
		return false, err
	}
	for _, b := range shallow {
		c, err := object.GetCommit(r.store, b)
		if err != nil {
			return false, err
		}
		for _, p := range c.ParentHashes {
			if _, err := r.store.EncodedObject(plumbing.CommitObject, p); errors.Is(err, plumbing.ErrObjectNotFound) && c.Committer.When.After(t) {
				return true, nil
			}
		}
	}
	return false, nil
}
