package gitrepo

import (
	"errors"
	"io"
	"path"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/object"
)

// ListFiles returns the paths of every file under a directory of the branch (the whole
// tree for "."), as last fetched or pushed, in Git's tree order.
func (r *Repo) ListFiles(dir string) ([]string, error) {
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
	prefix := ""
	if dir = path.Clean(dir); dir != "." {
		if t, err = t.Tree(dir); err != nil {
			return nil, nil
		}
		prefix = dir + "/"
	}
	var out []string
	walker := object.NewTreeWalker(t, true, nil)
	defer walker.Close()
	for {
		name, e, err := walker.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if e.Mode.IsFile() {
			out = append(out, prefix+strings.TrimPrefix(name, "/"))
		}
	}
	return out, nil
}
