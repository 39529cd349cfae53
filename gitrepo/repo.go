package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"

	"github.com/go-git/go-billy/v5/osfs"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/memory"
)

// Repo is a bare clone of one remote branch that changes are committed to. Its methods
// are safe for concurrent use; Apply calls are serialised.
type Repo struct {
	opts  Options
	ep    *transport.Endpoint
	auth  transport.AuthMethod
	store storage.Storer
	repo  *git.Repository
	mu    sync.Mutex
}

// Open clones the remote branch (or reuses and fetches the clone in Options.CacheDir). An
// empty remote repository is fine: the first Apply creates the branch.
func Open(ctx context.Context, opts Options) (*Repo, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	ep, err := transport.NewEndpoint(opts.URL)
	if err != nil {
		return nil, err
	}
	auth, err := opts.Auth.authMethod(ep)
	if err != nil {
		return nil, err
	}
	r := &Repo{opts: opts, ep: ep, auth: auth}
	if opts.CacheDir != "" {
		r.store = filesystem.NewStorage(osfs.New(opts.CacheDir), cache.NewObjectLRUDefault())
	} else {
		r.store = memory.NewStorage()
	}
	if r.repo, err = git.Open(r.store, nil); errors.Is(err, git.ErrRepositoryNotExists) {
		r.repo, err = git.Init(r.store, nil)
		if err == nil {
			_, err = r.repo.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{opts.URL}})
		}
	}
	if err != nil {
		return nil, fmt.Errorf("gitrepo: opening the local clone: %w", err)
	}
	if err := r.fetch(ctx, opts.Branch, true); err != nil {
		return nil, err
	}
	return r, nil
}

func remoteRef(branch string) plumbing.ReferenceName {
	return plumbing.NewRemoteReferenceName("origin", branch)
}

// fetch updates the remote-tracking ref of a branch. A missing branch is an error only
// when required and the remote has other branches.
func (r *Repo) fetch(ctx context.Context, branch string, required bool) error {
	spec := config.RefSpec(fmt.Sprintf("+refs/heads/%s:%s", branch, remoteRef(branch)))
	err := r.repo.FetchContext(ctx, &git.FetchOptions{RemoteName: "origin", RefSpecs: []config.RefSpec{spec}, Auth: r.auth, Force: true})
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
	}
	return classify(err)
}

func isNoMatchingRef(err error) bool {
	var nm git.NoMatchingRefSpecError
	return errors.As(err, &nm) || strings.Contains(err.Error(), "couldn't find remote ref")
}

// remoteRefs lists the remote's branches.
func (r *Repo) remoteRefs(ctx context.Context) ([]*plumbing.Reference, error) {
	rem, err := r.repo.Remote("origin")
	if err != nil {
		return nil, err
	}
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
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// head returns the last known commit of a remote branch (ZeroHash if it has none).
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

// treeOf returns a commit's tree (ZeroHash for none).
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

// Head returns the commit the branch is at, as last fetched or pushed.
func (r *Repo) Head() (plumbing.Hash, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.head(r.opts.Branch)
}

// ReadFile returns a file of the branch as last fetched or pushed; ok is false when the
// path does not exist.
func (r *Repo) ReadFile(p string) (data []byte, ok bool, err error) {
	// The object store is not safe for a read during a write: reads wait for Apply.
	r.mu.Lock()
	defer r.mu.Unlock()
	h, err := r.head(r.opts.Branch)
	if err != nil {
		return nil, false, err
	}
	tree, err := r.treeOf(h)
	if err != nil {
		return nil, false, err
	}
	b, err := readPath(r.store, tree, p)
	return b, b != nil, err
}

// ListDir returns the names of the files directly in a directory of the branch.
func (r *Repo) ListDir(dir string) ([]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	h, err := r.head(r.opts.Branch)
	if err != nil || h.IsZero() {
		return nil, err
	}
	tree, err := r.treeOf(h)
	if err != nil {
		return nil, err
	}
	t, err := object.GetTree(r.store, tree)
	if err != nil {
		return nil, err
	}
	if dir = path.Clean(dir); dir != "." {
		if t, err = t.Tree(dir); err != nil {
			return nil, nil
		}
	}
	var out []string
	for _, e := range t.Entries {
		if e.Mode.IsFile() {
			out = append(out, e.Name)
		}
	}
	return out, nil
}

// Fetch brings the branch up to date with the remote.
func (r *Repo) Fetch(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fetch(ctx, r.opts.Branch, true)
}
