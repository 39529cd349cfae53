package reconciler

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/gitrepo"
)

// DirSink writes plans into a directory laid out like the repository (render --out-dir).
// Every path is opened relative to the directory through os.Root, and a symbolic link on
// the way is refused, so nothing planted in the directory can make a write or a removal
// land outside it. A plan is written all or nothing: every file is staged beside its
// target first, and only then renamed into place.
type DirSink struct {
	// Root is the directory; it is created when missing.
	Root string
}

// errSymlink is returned when a path of the change crosses a symbolic link.
var errSymlink = errors.New("refusing to follow a symbolic link")

// Apply runs the pipeline for one event and writes the plan into the directory.
func (s *DirSink) Apply(ctx context.Context, p *Pipeline, ev *v1alpha1.ClusterEvent) (*Written, error) {
	res, err := p.Render(ctx, ev)
	if err != nil {
		return nil, err
	}
	// Plan first, against what is there: a refused plan must not leave a new directory.
	tree, done, err := s.Tree()
	if err != nil {
		return nil, stepError("read", err)
	}
	pl, err := p.Plan(ev, res, tree)
	done()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(s.Root, 0o755); err != nil {
		return nil, stepError("write", err)
	}
	root, err := os.OpenRoot(s.Root)
	if err != nil {
		return nil, stepError("write", err)
	}
	defer root.Close()
	return &Written{Plan: pl}, stepError("write", writePlan(root, pl))
}

// Tree returns the directory as a gitrepo.Tree, for diff; a missing directory is empty.
func (s *DirSink) Tree() (gitrepo.Tree, func(), error) {
	root, err := os.OpenRoot(s.Root)
	if errors.Is(err, fs.ErrNotExist) {
		return emptyTree{}, func() {}, nil
	}
	if err != nil {
		return nil, nil, err
	}
	return dirTree{root}, func() { root.Close() }, nil
}

// dirTree reads a directory as a gitrepo.Tree.
type dirTree struct{ root *os.Root }

var _ gitrepo.Tree = dirTree{}

// ReadFile implements gitrepo.Tree.
func (t dirTree) ReadFile(p string) ([]byte, bool, error) {
	if err := noSymlinks(t.root, p); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, false, nil
		}
		return nil, false, err
	}
	b, err := t.root.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	return b, err == nil, err
}

// ListDir implements gitrepo.Tree.
func (t dirTree) ListDir(dir string) ([]string, error) {
	if err := noSymlinks(t.root, dir); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	f, err := t.root.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if e.Type().IsRegular() {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// ListFiles implements gitrepo.Tree: the paths of the regular files under dir, sorted
// (Git's tree order). No command lists a directory whole today; the method makes a
// directory a gitrepo.Tree, the one interface the package plans against. A symbolic link
// is never followed: one on the way to dir is refused, as ReadFile refuses one, and one
// under it is left out with every other file that is not regular.
func (t dirTree) ListFiles(dir string) ([]string, error) {
	if err := noSymlinks(t.root, dir); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var out []string
	err := fs.WalkDir(t.root.FS(), dir, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case p == dir && !d.IsDir():
			return fs.SkipAll // a file, not a directory: nothing under it
		case d.Type().IsRegular():
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(out)
	return out, nil
}

// noSymlinks checks every component of p: none may be a symbolic link.
func noSymlinks(root *os.Root, p string) error {
	if !fs.ValidPath(p) {
		return fmt.Errorf("%q is not a relative path inside the directory", p)
	}
	parts := strings.Split(p, "/")
	for i := range parts {
		sub := path.Join(parts[:i+1]...)
		fi, err := root.Lstat(sub)
		if err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("%s: %w", sub, errSymlink)
		}
	}
	return nil
}

// writePlan stages every new file beside its target, then renames them into place and
// removes what the plan removes. A failure while staging leaves the directory as it was.
func writePlan(root *os.Root, pl *Plan) error {
	var writes, deletes []string
	for p, b := range pl.Changes {
		if b == nil {
			deletes = append(deletes, p)
		} else {
			writes = append(writes, p)
		}
	}
	slices.Sort(writes)
	slices.Sort(deletes)
	for _, p := range append(slices.Clone(writes), deletes...) {
		if err := noSymlinks(root, p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	staged := map[string]string{}
	cleanup := func() {
		for _, tmp := range staged {
			_ = root.Remove(tmp)
		}
	}
	for i, p := range writes {
		if err := root.MkdirAll(path.Dir(p), 0o755); err != nil {
			cleanup()
			return err
		}
		// MkdirAll may have walked an existing link planted as a parent: check again.
		if err := noSymlinks(root, path.Dir(p)); err != nil && path.Dir(p) != "." {
			cleanup()
			return err
		}
		mode := os.FileMode(0o644)
		if strings.HasPrefix(path.Base(p), generator.SecretFilePrefix) {
			mode = 0o600
		}
		tmp := path.Join(path.Dir(p), fmt.Sprintf(".tmp-%d-%s", i, path.Base(p)))
		f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
		if err != nil {
			cleanup()
			return err
		}
		staged[p] = tmp
		_, werr := f.Write(pl.Changes[p])
		if err := errors.Join(werr, f.Close()); err != nil {
			cleanup()
			return err
		}
	}
	for _, p := range writes {
		if err := root.Rename(staged[p], p); err != nil {
			cleanup()
			return err
		}
		delete(staged, p)
	}
	for _, p := range deletes {
		if err := root.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		// Prune the directories the removal emptied, as Git does.
		for dir := path.Dir(p); dir != "."; dir = path.Dir(dir) {
			if root.Remove(dir) != nil {
				break
			}
		}
	}
	return nil
}
