package gitrepo

import (
	"bytes"
	"crypto/sha1" //nolint:gosec // the pack format's trailer is SHA-1
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// pendingStore is the object store of a clone on disk. The objects a Batch writes stay in
// memory until it pushes them; then they go to disk at once, as the pack the push sends
// (one file and its index), instead of as a loose file each. Loose, every object cost a
// temporary file, a compression and a rename under the repository's lock: under 32
// concurrent clients that was over half of serve's CPU, and its events per second fell
// to half of a clone in memory's (BenchmarkServeLoad, docs/benchmarks.md). What a batch wrote
// and did not push (a group that failed before its push) never reaches the disk; the pack
// of a push the remote refused stays there, unreferenced, as a fetched pack's objects can. Everything else (refs, fetched packs, reads) is go-git's filesystem
// storage. Like the store it wraps, it is used under Repo.st only.
type pendingStore struct {
	*filesystem.Storage
	dir     string
	objects map[plumbing.Hash]plumbing.EncodedObject
}

func newPendingStore(dir string) *pendingStore {
	return &pendingStore{Storage: filesystem.NewStorage(osfs.New(dir), cache.NewObjectLRU(objectCacheSize)),
		dir: dir, objects: map[plumbing.Hash]plumbing.EncodedObject{}}
}

// SetEncodedObject keeps o in memory until keep or drop.
func (s *pendingStore) SetEncodedObject(o plumbing.EncodedObject) (plumbing.Hash, error) {
	if o.Type() == plumbing.OFSDeltaObject || o.Type() == plumbing.REFDeltaObject {
		return plumbing.ZeroHash, plumbing.ErrInvalidType
	}
	h := o.Hash()
	s.objects[h] = o
	return h, nil
}

// EncodedObject reads a pending object, or one on disk.
func (s *pendingStore) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	if o, ok := s.objects[h]; ok {
		if t != plumbing.AnyObject && o.Type() != t {
			return nil, plumbing.ErrObjectNotFound
		}
		return o, nil
	}
	return s.Storage.EncodedObject(t, h)
}

// HasEncodedObject is nil for a pending object or one on disk.
func (s *pendingStore) HasEncodedObject(h plumbing.Hash) error {
	if _, ok := s.objects[h]; ok {
		return nil
	}
	return s.Storage.HasEncodedObject(h)
}

// EncodedObjectSize is the size of a pending object or one on disk.
func (s *pendingStore) EncodedObjectSize(h plumbing.Hash) (int64, error) {
	if o, ok := s.objects[h]; ok {
		return o.Size(), nil
	}
	return s.Storage.EncodedObjectSize(h)
}

// keep writes the pack a push sent (nil: it sent no object) to disk, where it holds every
// object the pushed commits added, and forgets the pending objects; then it merges the
// small packs when there are too many (compact).
func (s *pendingStore) keep(pack []byte) error {
	clear(s.objects)
	if pack == nil {
		return nil
	}
	if err := s.writePack(pack); err != nil {
		return err
	}
	return s.compact()
}

// drop forgets the pending objects: their commits were not pushed.
func (s *pendingStore) drop() { clear(s.objects) }

// writePack stores a complete (not thin) pack with its index, through go-git, which
// indexes it as it is written.
func (s *pendingStore) writePack(pack []byte) error {
	w, err := s.PackfileWriter()
	if err != nil {
		return err
	}
	if _, err := io.Copy(w, bytes.NewReader(pack)); err != nil {
		_ = w.Close()
		return err
	}
	return w.Close()
}

// maxPacks is how many packs a clone may hold before compact merges the small ones. An
// object read that misses go-git's cache probes the index of every pack.
const maxPacks = 32

// maxMergedObjects bounds the objects one merge reads, all of them in memory at once: a
// pack larger than this (the clone's first fetch, typically) is never merged.
const maxMergedObjects = 20000

// compact merges the smallest packs into one when there are more than maxPacks, the way
// git's geometric repack does: from the smallest up, each next pack joins while it holds
// fewer than twice the objects of those before it, so an object is merged again only
// once its pack has doubled, a logarithmic number of times.
func (s *pendingStore) compact() error {
	packs, err := s.ObjectPacks()
	if err != nil || len(packs) <= maxPacks {
		return err
	}
	type sized struct {
		hash  plumbing.Hash
		index *idxfile.MemoryIndex
		count int
	}
	var all []sized
	for _, h := range packs {
		idx, err := s.readIndex(h)
		if err != nil {
			return err
		}
		n, err := idx.Count()
		if err != nil {
			return err
		}
		if n <= maxMergedObjects {
			all = append(all, sized{h, idx, int(n)})
		}
	}
	slices.SortFunc(all, func(a, b sized) int { return a.count - b.count })
	k, sum := 0, 0
	for k < len(all) && (k < 2 || all[k].count < 2*sum) && sum+all[k].count <= maxMergedObjects {
		sum += all[k].count
		k++
	}
	if k < 2 {
		return nil
	}
	m := newPackMerger()
	for _, pk := range all[:k] {
		pack, err := os.ReadFile(s.packPath(pk.hash, "pack"))
		if err != nil {
			return err
		}
		if err := m.add(pack, pk.index, s.whole); err != nil {
			return err
		}
	}
	if err := s.writeMerged(m); err != nil {
		return err
	}
	for _, pk := range all[:k] {
		if err := s.DeleteOldObjectPackAndIndex(pk.hash, time.Time{}); err != nil {
			return err
		}
	}
	s.Reindex() // the merged pack's index comes, the deleted packs' go
	return nil
}

// whole reads an object on disk whole, for a merge.
func (s *pendingStore) whole(h plumbing.Hash) (newObject, error) {
	o, err := s.Storage.EncodedObject(plumbing.AnyObject, h)
	if err != nil {
		return newObject{}, err
	}
	r, err := o.Reader()
	if err != nil {
		return newObject{}, err
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	return newObject{hash: h, typ: o.Type(), data: data}, err
}

// writeMerged writes m's pack and its index: the index first, as go-git writes a
// fetched pack's, so that a crash leaves an index without a pack, which checkPacks
// removes.
func (s *pendingStore) writeMerged(m *packMerger) error {
	pack, idx, err := m.pack()
	if err != nil {
		return err
	}
	var idxData bytes.Buffer
	if _, err := idxfile.NewEncoder(&idxData).Encode(idx); err != nil {
		return err
	}
	sum := plumbing.Hash(pack[len(pack)-sha1.Size:])
	if err := writeFileAtomic(s.packPath(sum, "idx"), idxData.Bytes()); err != nil {
		return err
	}
	return writeFileAtomic(s.packPath(sum, "pack"), pack)
}

// packPath is the file of pack h with the extension ext (pack, idx).
func (s *pendingStore) packPath(h plumbing.Hash, ext string) string {
	return filepath.Join(s.dir, "objects", "pack", "pack-"+h.String()+"."+ext)
}

// writeFileAtomic writes a file under a temporary name and renames it into place.
func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o444); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// readIndex reads the index of pack h.
func (s *pendingStore) readIndex(h plumbing.Hash) (*idxfile.MemoryIndex, error) {
	f, err := os.Open(s.packPath(h, "idx"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	idx := idxfile.NewMemoryIndex()
	return idx, idxfile.NewDecoder(f).Decode(idx)
}

// keep stores the objects of a push that landed (pack), on a clone on disk. Callers hold
// st.
func (r *Repo) keep(pack []byte) error {
	if s, ok := r.store.(*pendingStore); ok {
		return s.keep(pack)
	}
	return nil
}

// dropPending forgets what a batch wrote and did not push. Callers hold st.
func (r *Repo) dropPending() {
	if s, ok := r.store.(*pendingStore); ok {
		s.drop()
	}
}
