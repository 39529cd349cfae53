package gitrepo

import (
	"sort"

	"github.com/go-git/go-git/v5/plumbing"
)

// checkConflicts fails when a path of the change differs between the state the change
// was first built on and the new remote head, unless the remote already holds exactly
// the desired content: two writers with the same intent never conflict. Callers hold st.
func (r *Repo) checkConflicts(branch string, first, now plumbing.Hash, files map[string][]byte) error {
	if first == now {
		return nil
	}
	t1, err := r.treeOf(first)
	if err != nil {
		return &localError{err}
	}
	t2, err := r.treeOf(now)
	if err != nil {
		return &localError{err}
	}
	var paths []string
	for p, want := range files {
		h1, err := blobHash(r.store, t1, p)
		if err != nil {
			return &localError{err}
		}
		h2, err := blobHash(r.store, t2, p)
		if err != nil {
			return &localError{err}
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
