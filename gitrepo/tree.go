package gitrepo

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
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
	created []newObject
}

// apply returns the hash of tree (ZeroHash for none) with changes applied; paths are
// relative to that tree. An empty result returns ZeroHash.
func (b *treeBuilder) apply(tree plumbing.Hash, changes map[string][]byte) (plumbing.Hash, error) {
	return b.applyAt(tree, changes, "")
}

// applyAt is apply for the tree at dir ("" for the root), which names changed paths.
func (b *treeBuilder) applyAt(tree plumbing.Hash, changes map[string][]byte, dir string) (plumbing.Hash, error) {
	var entries []object.TreeEntry
	if !tree.IsZero() {
		old, err := trees.entries(b.s, tree)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		entries = append(entries, old...)
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
	for name := range files {
		if dirs[name] != nil {
			return plumbing.ZeroHash, &pathError{path: name, why: "is both a file and a directory of the change"}
		}
	}
	index := map[string]int{}
	for i, e := range entries {
		index[e.Name] = i
	}
	set := func(name string, h plumbing.Hash, mode filemode.FileMode) error {
		if i, ok := index[name]; ok {
			if h.IsZero() {
				entries[i].Name = "" // removed below
				return nil
			}
			entries[i].Hash, entries[i].Mode = h, mode
			return nil
		}
		if h.IsZero() {
			return nil
		}
		// Last line of defence: never add an entry git fsck --strict would refuse.
		if err := validName(name); err != nil {
			return &pathError{path: name, why: "is not a valid tree entry name"}
		}
		index[name] = len(entries)
		entries = append(entries, object.TreeEntry{Name: name, Hash: h, Mode: mode})
		return nil
	}
	for name, content := range files {
		i, exists := index[name]
		if exists && entries[i].Mode == filemode.Dir {
			// Never replace a directory wholesale: a change names files.
			return plumbing.ZeroHash, &pathError{path: name, why: "is a directory"}
		}
		if content == nil {
			if err := set(name, plumbing.ZeroHash, filemode.Regular); err != nil {
				return plumbing.ZeroHash, err
			}
			continue
		}
		h := plumbing.ComputeHash(plumbing.BlobObject, content)
		if !exists || entries[i].Hash != h || !entries[i].Mode.IsFile() {
			// Only new content is stored, so the push carries only what changed.
			var prev plumbing.Hash
			if exists && entries[i].Mode.IsFile() {
				prev = entries[i].Hash
			}
			if _, err := b.blob(content, prev); err != nil {
				return plumbing.ZeroHash, err
			}
		}
		mode := filemode.Regular
		if exists && entries[i].Mode == filemode.Executable {
			mode = filemode.Executable // content is what a change says; the mode is kept
		}
		if err := set(name, h, mode); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	for name, sub := range dirs {
		var old plumbing.Hash
		i, exists := index[name]
		if exists && entries[i].Mode != filemode.Dir {
			if !onlyDeletes(sub) {
				// Never replace a file (or symlink, or submodule) by a directory silently.
				return plumbing.ZeroHash, &pathError{path: name, why: "is not a directory"}
			}
			continue // deleting below a file: nothing there to delete
		}
		if exists {
			old = entries[i].Hash
		}
		h, err := b.applyAt(old, sub, dir+name+"/")
		if err != nil {
			return plumbing.ZeroHash, prefixErr(name, err)
		}
		if err := set(name, h, filemode.Dir); err != nil {
			return plumbing.ZeroHash, err
		}
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
	slices.SortFunc(kept, compareEntries)
	return b.write(&object.Tree{Entries: kept}, tree)
}

// pathError is a change the tree cannot take at a path; it wraps ErrInvalidChange.
type pathError struct{ path, why string }

func (e *pathError) Error() string {
	return fmt.Sprintf("%v: files: %q %s", ErrInvalidChange, e.path, e.why)
}

func (e *pathError) Unwrap() error { return ErrInvalidChange }

func onlyDeletes(changes map[string][]byte) bool {
	for _, c := range changes {
		if c != nil {
			return false
		}
	}
	return true
}

// prefixErr makes a nested tree's error name the full path.
func prefixErr(dir string, err error) error {
	var pe *pathError
	if errors.As(err, &pe) {
		return &pathError{path: dir + "/" + pe.path, why: pe.why}
	}
	return err
}

// blob stores content; prev is the blob it replaces at its path (zero for a new file).
func (b *treeBuilder) blob(content []byte, prev plumbing.Hash) (plumbing.Hash, error) {
	// A copy: the pack is written from it on another goroutine, and content is the
	// caller's.
	content = bytes.Clone(content)
	obj, err := b.object(plumbing.BlobObject, content)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return b.store(obj, content, prev)
}

// object makes an object of the store's kind holding content, without storing it.
func (b *treeBuilder) object(typ plumbing.ObjectType, content []byte) (plumbing.EncodedObject, error) {
	obj := b.s.NewEncodedObject()
	obj.SetType(typ)
	obj.SetSize(int64(len(content)))
	w, err := obj.Writer()
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(content); err != nil {
		return nil, err
	}
	return obj, w.Close()
}

// write stores a tree unless it is identical to old.
func (b *treeBuilder) write(t *object.Tree, old plumbing.Hash) (plumbing.Hash, error) {
	data := encodeTree(t.Entries)
	obj, err := b.object(plumbing.TreeObject, data)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if obj.Hash() == old {
		return old, nil
	}
	h, err := b.store(obj, data, old)
	if err == nil {
		// The next commit of a group, and the plan of the next event, read this tree
		// again: the widest one (a namespace per entry) would be decoded each time.
		trees.put(h, t.Entries)
	}
	return h, err
}

// encodeTree is the canonical encoding of sorted entries, byte for byte what
// object.Tree.Encode writes. That formats every entry's mode with fmt, and a group
// rewrites the 500-entry namespace list once per commit, where the formatting shows in
// BenchmarkGroup.
func encodeTree(entries []object.TreeEntry) []byte {
	n := 0
	for _, e := range entries {
		n += len("100644 ") + len(e.Name) + 1 + len(e.Hash)
	}
	buf := make([]byte, 0, n)
	for _, e := range entries {
		buf = strconv.AppendUint(buf, uint64(e.Mode), 8)
		buf = append(buf, ' ')
		buf = append(buf, e.Name...)
		buf = append(buf, 0)
		buf = append(buf, e.Hash[:]...)
	}
	return buf
}

// store writes obj and records it, with its content (data, which must not change
// afterwards) and the object it replaces at its path (prev), for the push.
func (b *treeBuilder) store(obj plumbing.EncodedObject, data []byte, prev plumbing.Hash) (plumbing.Hash, error) {
	h, err := b.s.SetEncodedObject(obj)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	b.created = append(b.created, newObject{hash: h, prev: prev, typ: obj.Type(), data: data})
	return h, nil
}

// lookup finds the entry of path p in tree. found is false when the path does not exist
// (or goes through something that is not a directory); err is only for objects the store
// cannot read, which means the local clone is damaged.
func lookup(s storer.EncodedObjectStorer, tree plumbing.Hash, p string) (e object.TreeEntry, found bool, err error) {
	if tree.IsZero() || p == "" {
		return e, false, nil
	}
	for {
		entries, err := trees.entries(s, tree)
		if err != nil {
			return e, false, err
		}
		name, rest, more := strings.Cut(p, "/")
		e, found = findEntry(entries, name)
		if !found {
			return e, false, nil
		}
		if !more {
			return e, true, nil
		}
		if e.Mode != filemode.Dir {
			return object.TreeEntry{}, false, nil
		}
		tree, p = e.Hash, rest
	}
}

// findEntry finds name among entries in Git's tree order (by name, a directory's name
// compared as if it ended in "/"): a file is where its name sorts, a directory where its
// name plus "/" does.
func findEntry(entries []object.TreeEntry, name string) (object.TreeEntry, bool) {
	for _, mode := range []filemode.FileMode{filemode.Regular, filemode.Dir} {
		i, _ := slices.BinarySearchFunc(entries, object.TreeEntry{Name: name, Mode: mode}, compareEntries)
		if i < len(entries) && entries[i].Name == name {
			return entries[i], true
		}
	}
	return object.TreeEntry{}, false
}

// compareEntries orders tree entries as Git does: by name, a directory's name compared as
// if it ended in "/" (entryKey in the tests), without building those keys. Names have no
// '/', so the keys differ at the first byte where the names differ, or at the end of the
// shorter name, where a directory's key goes on with '/'.
func compareEntries(a, b object.TreeEntry) int {
	n := min(len(a.Name), len(b.Name))
	if c := strings.Compare(a.Name[:n], b.Name[:n]); c != 0 {
		return c
	}
	return cmp.Compare(keyByte(a, n), keyByte(b, n))
}

// keyByte is byte i of e's sort key, or -1 past its end.
func keyByte(e object.TreeEntry, i int) int {
	switch {
	case i < len(e.Name):
		return int(e.Name[i])
	case i == len(e.Name) && e.Mode == filemode.Dir:
		return '/'
	}
	return -1
}

// readPath returns the content of path in tree; ok is false when there is no such file.
func readPath(s storer.EncodedObjectStorer, tree plumbing.Hash, p string) (data []byte, ok bool, err error) {
	e, found, err := lookup(s, tree, p)
	if err != nil || !found || !e.Mode.IsFile() {
		// Absent, or not a file (a directory, a submodule).
		return nil, false, err
	}
	if b, ok := blobs.get(e.Hash); ok {
		return bytes.Clone(b), true, nil
	}
	blob, err := object.GetBlob(s, e.Hash)
	if err != nil {
		return nil, false, err
	}
	r, err := blob.Reader()
	if err != nil {
		return nil, false, err
	}
	defer r.Close()
	buf := bytes.NewBuffer(make([]byte, 0, blob.Size))
	if _, err := io.Copy(buf, r); err != nil {
		return nil, false, err
	}
	blobs.put(e.Hash, buf.Bytes())
	return bytes.Clone(buf.Bytes()), true, nil
}

// blobHash returns the hash of path in tree (ZeroHash when absent), reading only the trees
// on the path.
func blobHash(s storer.EncodedObjectStorer, tree plumbing.Hash, p string) (plumbing.Hash, error) {
	e, found, err := lookup(s, tree, p)
	if err != nil || !found {
		return plumbing.ZeroHash, err
	}
	return e.Hash, nil
}
