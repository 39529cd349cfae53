package gitrepo

import (
	"path"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Tree reads the files of one commit: the branch head (see Repo.Snapshot), or the commit
// a change is planned on (see Planned).
type Tree interface {
	// ReadFile returns a file's content; ok is false when there is no such file.
	ReadFile(path string) (data []byte, ok bool, err error)
	// ListDir returns the base names of the files directly in dir (none if it is
	// missing), in Git's tree order.
	ListDir(dir string) ([]string, error)
	// ListFiles returns the paths of every file under dir ("." for all), in Git's tree
	// order (none if it is missing).
	ListFiles(dir string) ([]string, error)
}

// Snapshot is the Tree of one commit of a Repo. It stays valid while the Repo moves on;
// its reads wait only for the moments a writer uses the local object store.
type Snapshot struct {
	r      *Repo
	commit plumbing.Hash
	// tree is the commit's root tree once resolved; guarded by the Repo's st, which every
	// read holds. A plan or a resync reads many files of one snapshot, and each would
	// otherwise decode the commit again.
	tree     plumbing.Hash
	resolved bool
	// reads, when set, records what is read (guarded by st, as above).
	reads *readSet
}

var _ Tree = (*Snapshot)(nil)

// Commit is the commit the snapshot reads (zero for an empty branch).
func (s *Snapshot) Commit() plumbing.Hash { return s.commit }

// Snapshot returns the Tree of the branch head, as last fetched or pushed.
func (r *Repo) Snapshot() (*Snapshot, error) {
	var h plumbing.Hash
	err := r.locked(func() (err error) {
		h, err = r.head(r.opts.Branch)
		return r.noteDamage(err)
	})
	if err != nil {
		return nil, err
	}
	return &Snapshot{r: r, commit: h}, nil
}

// Head returns the commit the branch is at, as last fetched or pushed.
func (r *Repo) Head() (plumbing.Hash, error) {
	s, err := r.Snapshot()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return s.commit, nil
}

// ReadFile returns a file of the branch as last fetched or pushed; ok is false when the
// path does not exist.
func (r *Repo) ReadFile(p string) (data []byte, ok bool, err error) {
	s, err := r.Snapshot()
	if err != nil {
		return nil, false, err
	}
	return s.ReadFile(p)
}

// ListDir returns the names of the files directly in a directory of the branch.
func (r *Repo) ListDir(dir string) ([]string, error) {
	s, err := r.Snapshot()
	if err != nil {
		return nil, err
	}
	return s.ListDir(dir)
}

// ListFiles returns the paths of every file under a directory of the branch (the whole
// tree for "."), as last fetched or pushed, in Git's tree order.
func (r *Repo) ListFiles(dir string) ([]string, error) {
	s, err := r.Snapshot()
	if err != nil {
		return nil, err
	}
	return s.ListFiles(dir)
}

// ReadFile implements Tree.
func (s *Snapshot) ReadFile(p string) (data []byte, ok bool, err error) {
	err = s.r.locked(func() error {
		if s.reads != nil {
			s.reads.file(p)
		}
		tree, err := s.root()
		if err == nil {
			data, ok, err = readPath(s.r.store, tree, p)
		}
		return s.r.noteDamage(err)
	})
	return data, ok, err
}

// ListDir implements Tree.
func (s *Snapshot) ListDir(dir string) (names []string, err error) {
	err = s.r.locked(func() error {
		if s.reads != nil {
			s.reads.dir(dir)
		}
		t, _, err := s.dir(dir)
		if err != nil || t == nil {
			return s.r.noteDamage(err)
		}
		for _, e := range t.Entries {
			if e.Mode.IsFile() {
				names = append(names, e.Name)
			}
		}
		return nil
	})
	return names, err
}

// Hashes returns the object hash of every file and directory under dir by path, dir's
// own under its cleaned path; none when there is no such directory. Equal hashes mean
// equal contents, to the last byte of every file under a directory: a caller that
// remembers what it concluded from some paths can tell them again without reading them.
func (s *Snapshot) Hashes(dir string) (map[string]string, error) {
	out := map[string]string{}
	err := s.r.locked(func() error {
		if s.reads != nil {
			s.reads.dir(dir)
		}
		root, err := s.root()
		if err != nil || root.IsZero() {
			return s.r.noteDamage(err)
		}
		h, prefix := root, ""
		if dir = path.Clean(dir); dir != "." && dir != "/" {
			e, found, err := lookup(s.r.store, root, dir)
			if err != nil || !found || e.Mode != filemode.Dir {
				return s.r.noteDamage(err)
			}
			h, prefix = e.Hash, dir+"/"
		}
		out[dir] = h.String()
		return s.r.noteDamage(s.walkHashes(h, prefix, out))
	})
	return out, err
}

// walkHashes adds the hashes under tree h, whose paths start with prefix. Callers hold st.
func (s *Snapshot) walkHashes(h plumbing.Hash, prefix string, out map[string]string) error {
	t, err := object.GetTree(s.r.store, h)
	if err != nil {
		return err
	}
	for _, e := range t.Entries {
		switch {
		case e.Mode == filemode.Dir:
			out[prefix+e.Name] = e.Hash.String()
			if err := s.walkHashes(e.Hash, prefix+e.Name+"/", out); err != nil {
				return err
			}
		case e.Mode.IsFile():
			out[prefix+e.Name] = e.Hash.String()
		}
	}
	return nil
}

// ListFiles implements Tree.
func (s *Snapshot) ListFiles(dir string) (files []string, err error) {
	err = s.r.locked(func() error {
		if s.reads != nil {
			s.reads.dir(dir)
		}
		t, prefix, err := s.dir(dir)
		if err != nil || t == nil {
			return s.r.noteDamage(err)
		}
		return s.r.noteDamage(s.walkFiles(t, prefix, &files))
	})
	return files, err
}

// dir returns the tree of a directory (nil when it does not exist) and the prefix of
// the paths under it. Callers hold st.
func (s *Snapshot) dir(dir string) (*object.Tree, string, error) {
	root, err := s.root()
	if err != nil || root.IsZero() {
		return nil, "", err
	}
	h, prefix := root, ""
	if dir = path.Clean(dir); dir != "." && dir != "/" {
		e, found, err := lookup(s.r.store, root, dir)
		if err != nil || !found || e.Mode != filemode.Dir {
			return nil, "", err
		}
		h, prefix = e.Hash, dir+"/"
	}
	t, err := object.GetTree(s.r.store, h)
	return t, prefix, err
}

// root returns the snapshot's root tree, resolving it once. Callers hold st.
func (s *Snapshot) root() (plumbing.Hash, error) {
	if !s.resolved {
		t, err := s.r.treeOf(s.commit)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		s.tree, s.resolved = t, true
	}
	return s.tree, nil
}

// walkFiles appends the paths of the files under t, depth first in tree order. Callers
// hold st.
func (s *Snapshot) walkFiles(t *object.Tree, prefix string, out *[]string) error {
	for _, e := range t.Entries {
		switch {
		case e.Mode == filemode.Dir:
			sub, err := object.GetTree(s.r.store, e.Hash)
			if err != nil {
				return err
			}
			if err := s.walkFiles(sub, prefix+e.Name+"/", out); err != nil {
				return err
			}
		case e.Mode.IsFile():
			*out = append(*out, prefix+e.Name)
		}
	}
	return nil
}

// Branch is the branch the Repo commits to (Options.Branch).
func (r *Repo) Branch() string { return r.opts.Branch }
