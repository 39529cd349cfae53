package gitrepo

import (
	"bytes"
	"errors"
	"io"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// treeBuilder writes new trees from an existing one and a set of path changes, touching
// only the trees on the changed paths: the cost is O(changed paths × depth), not
// O(repository). It records every object it writes, which is exactly what a push sends.
type treeBuilder struct {
	s       storer.EncodedObjectStorer
	created []plumbing.Hash
}

// apply returns the hash of tree (ZeroHash for none) with changes applied; paths are
// relative to that tree. An empty result returns ZeroHash.
func (b *treeBuilder) apply(tree plumbing.Hash, changes map[string][]byte) (plumbing.Hash, error) {
	var entries []object.TreeEntry
	if !tree.IsZero() {
		t, err := object.GetTree(b.s, tree)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		entries = append(entries, t.Entries...)
	}
	// Group the changes by their first path segment.
	files := map[string][]byte{}
	dirs := map[string]map[string][]byte{}
	for p, content := range changes {
		if i := strings.IndexByte(p, '/'); i >= 0 {
			name := p[:i]
			if dirs[name] == nil {
				dirs[name] = map[string][]byte{}
			}
			dirs[name][p[i+1:]] = content
		} else {
			files[p] = content
		}
	}
	index := map[string]int{}
	for i, e := range entries {
		index[e.Name] = i
	}
	set := func(name string, h plumbing.Hash, mode filemode.FileMode) {
		if i, ok := index[name]; ok {
			if h.IsZero() {
				entries[i].Name = "" // removed below
				return
			}
			entries[i].Hash, entries[i].Mode = h, mode
			return
		}
		if !h.IsZero() {
			index[name] = len(entries)
			entries = append(entries, object.TreeEntry{Name: name, Hash: h, Mode: mode})
		}
	}
	for name, content := range files {
		if content == nil {
			set(name, plumbing.ZeroHash, filemode.Regular)
			continue
		}
		h, err := b.blob(content)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		set(name, h, filemode.Regular)
	}
	for name, sub := range dirs {
		var old plumbing.Hash
		if i, ok := index[name]; ok && entries[i].Mode == filemode.Dir {
			old = entries[i].Hash
		}
		h, err := b.apply(old, sub)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		set(name, h, filemode.Dir)
	}
	kept := entries[:0]
	for _, e := range entries {
		if e.Name != "" {
			kept = append(kept, e)
		}
	}
	if len(kept) == 0 {
		return plumbing.ZeroHash, nil
	}
	// Git orders entries by name, comparing a directory as if its name ended in "/".
	key := func(e object.TreeEntry) string {
		if e.Mode == filemode.Dir {
			return e.Name + "/"
		}
		return e.Name
	}
	sort.Slice(kept, func(i, j int) bool { return key(kept[i]) < key(kept[j]) })
	return b.write(&object.Tree{Entries: kept}, tree)
}

func (b *treeBuilder) blob(content []byte) (plumbing.Hash, error) {
	obj := b.s.NewEncodedObject()
	obj.SetType(plumbing.BlobObject)
	obj.SetSize(int64(len(content)))
	w, err := obj.Writer()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := w.Write(content); err != nil {
		return plumbing.ZeroHash, err
	}
	if err := w.Close(); err != nil {
		return plumbing.ZeroHash, err
	}
	return b.store(obj)
}

// write stores a tree unless it is identical to old.
func (b *treeBuilder) write(t *object.Tree, old plumbing.Hash) (plumbing.Hash, error) {
	obj := b.s.NewEncodedObject()
	if err := t.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	if obj.Hash() == old {
		return old, nil
	}
	return b.store(obj)
}

func (b *treeBuilder) store(obj plumbing.EncodedObject) (plumbing.Hash, error) {
	h, err := b.s.SetEncodedObject(obj)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	b.created = append(b.created, h)
	return h, nil
}

// readPath returns the content of path in tree, or nil when absent.
func readPath(s storer.EncodedObjectStorer, tree plumbing.Hash, p string) ([]byte, error) {
	if tree.IsZero() {
		return nil, nil
	}
	t, err := object.GetTree(s, tree)
	if err != nil {
		return nil, err
	}
	f, err := t.File(p)
	if errors.Is(err, object.ErrFileNotFound) || errors.Is(err, object.ErrDirectoryNotFound) || errors.Is(err, object.ErrEntryNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	r, err := f.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var buf bytes.Buffer
	_, err = io.Copy(&buf, r)
	return buf.Bytes(), err
}

// blobHash returns the hash of path in tree (ZeroHash when absent), reading only the trees
// on the path.
func blobHash(s storer.EncodedObjectStorer, tree plumbing.Hash, p string) (plumbing.Hash, error) {
	if tree.IsZero() {
		return plumbing.ZeroHash, nil
	}
	t, err := object.GetTree(s, tree)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	e, err := t.FindEntry(p)
	if err != nil {
		return plumbing.ZeroHash, nil
	}
	return e.Hash, nil
}
