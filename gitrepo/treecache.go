package gitrepo

import (
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// treeCacheBytes bounds the decoded trees kept, counted as their entries take memory: the
// directories a burst of events touches on a 10,000-cluster repository (root, clusters/,
// clusters/magnum/ with one entry per project namespace, each namespace and each cluster
// directory) fit. Bounded by count instead, every commit of a resync that rewrites the
// fleet left its own copy of the widest tree (500 namespaces, ~45 KB decoded) in the cache
// until it held thousands of them: tens of MiB at serve's peak (BenchmarkServeStart).
const treeCacheBytes = 4 << 20

// treeEntryBytes is what one decoded entry costs besides its name: the TreeEntry (name's
// header, mode, hash) in its slice.
const treeEntryBytes = 48

// trees holds decoded trees by hash. A tree's hash names its content, so a cached tree is
// right for every repository and never goes stale; the cache only saves decoding. Reading
// one file of a cluster decodes four or five trees, and the widest of them (one entry per
// project namespace) dominated the cost of planning an event on a large repository.
var trees = &treeCache{cur: map[plumbing.Hash][]object.TreeEntry{}}

// treeCache is a bounded map of decoded trees, safe for concurrent use: two generations,
// the older one dropped when the newer holds half the budget, so the trees in use stay
// without tracking recency for each read (as blobCache).
type treeCache struct {
	mu       sync.Mutex
	cur, old map[plumbing.Hash][]object.TreeEntry
	size     int // bytes in cur
}

// entries returns the entries of tree h, decoding it on a miss. Callers must not modify the
// returned slice.
func (c *treeCache) entries(s storer.EncodedObjectStorer, h plumbing.Hash) ([]object.TreeEntry, error) {
	c.mu.Lock()
	e, ok := c.cur[h]
	if !ok {
		if e, ok = c.old[h]; ok {
			c.add(h, e)
		}
	}
	c.mu.Unlock()
	if ok {
		return e, nil
	}
	t, err := object.GetTree(s, h)
	if err != nil {
		return nil, err
	}
	c.put(h, t.Entries)
	return t.Entries, nil
}

// put keeps the entries of tree h; nobody may modify them afterwards.
func (c *treeCache) put(h plumbing.Hash, e []object.TreeEntry) {
	c.mu.Lock()
	c.add(h, e)
	c.mu.Unlock()
}

// add keeps e in the newer generation; c.mu is held.
func (c *treeCache) add(h plumbing.Hash, e []object.TreeEntry) {
	n := 0
	for i := range e {
		n += treeEntryBytes + len(e[i].Name)
	}
	if n > treeCacheBytes/8 {
		return // a tree this wide would push out most others
	}
	if c.size+n > treeCacheBytes/2 {
		c.old, c.cur, c.size = c.cur, make(map[plumbing.Hash][]object.TreeEntry, len(c.cur)), 0
	}
	c.cur[h] = e
	c.size += n
}
