package gitrepo

import (
	"errors"
	"path"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// A forge that merges a change by squash or rebase puts a commit on the branch that is not
// the one pushed, with another message: what it carries is the content. ChangedUnder and
// SameEntries let a caller recognise it: the files a commit changed, then whether the
// branch's tree holds them as the commit left them. A commit the local store does not
// hold gives nothing and no error: the caller asks again after a fetch.

// ChangedUnder returns the paths under dir that commit (a full hexadecimal id) added,
// changed or removed against its first parent (every file of dir for a root commit), in
// no particular order; nil when the store does not hold the commit.
func (r *Repo) ChangedUnder(commit, dir string) ([]string, error) {
	if !plumbing.IsHash(commit) {
		return nil, nil
	}
	var out []string
	err := r.locked(func() error {
		c, err := r.heldCommit(plumbing.NewHash(commit))
		if c == nil {
			return err
		}
		out, err = r.changedUnder(c, dir)
		return r.noteDamage(err)
	})
	return out, err
}

// SameEntries reports whether commits a and b hold the same entry at every path: the same
// file or directory by its Git hash, or nothing in either; false when the store does not
// hold one of them.
func (r *Repo) SameEntries(a, b string, paths ...string) (bool, error) {
	if !plumbing.IsHash(a) || !plumbing.IsHash(b) {
		return false, nil
	}
	same := false
	err := r.locked(func() error {
		var err error
		same, err = r.sameEntries(plumbing.NewHash(a), plumbing.NewHash(b), paths)
		return r.noteDamage(err)
	})
	return same && err == nil, err
}

func (r *Repo) sameEntries(a, b plumbing.Hash, paths []string) (bool, error) {
	ta, err := r.heldTree(a)
	if ta == nil {
		return false, err
	}
	tb, err := r.heldTree(b)
	if tb == nil {
		return false, err
	}
	for _, p := range paths {
		ea, err := entryAt(ta, p)
		if err != nil {
			return false, err
		}
		eb, err := entryAt(tb, p)
		if err != nil || ea != eb {
			return false, err
		}
	}
	return true, nil
}

// heldTree is the root tree of a commit in the local store, nil when the commit is not
// there.
func (r *Repo) heldTree(h plumbing.Hash) (*object.Tree, error) {
	c, err := r.heldCommit(h)
	if c == nil {
		return nil, err
	}
	return c.Tree()
}

// changedUnder is ChangedUnder with the store locked.
func (r *Repo) changedUnder(c *object.Commit, dir string) ([]string, error) {
	tree, err := c.Tree()
	if err != nil {
		return nil, err
	}
	var parent *object.Tree
	if len(c.ParentHashes) > 0 {
		if parent, err = r.heldTree(c.ParentHashes[0]); err != nil {
			return nil, err
		}
	}
	sub, err := subtree(tree, dir)
	if err != nil {
		return nil, err
	}
	psub, err := subtree(parent, dir)
	if err != nil {
		return nil, err
	}
	changes, err := object.DiffTree(psub, sub)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(changes))
	for _, ch := range changes {
		name := ch.To.Name
		if name == "" {
			name = ch.From.Name
		}
		out = append(out, path.Join(dir, name))
	}
	return out, nil
}

// subtree is the tree at dir in t; nil when t is nil or holds no such directory.
func subtree(t *object.Tree, dir string) (*object.Tree, error) {
	if t == nil {
		return nil, nil
	}
	sub, err := t.Tree(dir)
	if errors.Is(err, object.ErrDirectoryNotFound) || errors.Is(err, object.ErrEntryNotFound) {
		return nil, nil
	}
	return sub, err
}

// entryAt is the hash of the entry at p in t, the zero hash when there is none.
func entryAt(t *object.Tree, p string) (plumbing.Hash, error) {
	e, err := t.FindEntry(p)
	switch {
	case errors.Is(err, object.ErrEntryNotFound), errors.Is(err, object.ErrDirectoryNotFound):
		return plumbing.ZeroHash, nil
	case err != nil:
		return plumbing.ZeroHash, err
	}
	return e.Hash, nil
}
