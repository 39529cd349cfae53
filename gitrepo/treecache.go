package gitrepo

import (
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// treeCacheSize bounds the decoded trees kept: enough for the directories a burst of events
// touches on a 10,000-cluster repository (root, clusters/, clusters/magnum/ with one entry
// per project namespace, each namespace and each cluster directory), small enough to
// forget: a few MiB.
const treeCacheSize = 8192

// trees holds decoded trees by hash. A tree's hash names its content, so a cached tree is
// right for every repository and never goes stale; the cache only saves decoding. Reading
// one file of a cluster decodes four or five trees, and the widest of them (one entry per
// project namespace) dominated the cost of planning an event on a large repository.
var trees = &treeCache{m: make(map[plumbing.Hash][]object.TreeEntry)}

// treeCache is a bounded map of decoded trees, safe for concurrent use.
type treeCache struct {
	mu sync.Mutex
	m  map[plumbing.Hash][]object.TreeEntry
}

// entries returns the entries of tree h, decoding it on a miss. Callers must not modify the
// returned slice.
func (c *treeCache) entries(s storer.EncodedObjectStorer, h plumbing.Hash) ([]object.TreeEntry, error) {
	c.mu.Lock()
	e, ok := c.m[h]
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
	if len(c.m) >= treeCacheSize {
		// Forget everything rather than track recency: the trees in use come back at the
		// cost of one decode each.
		clear(c.m)
	}
	c.m[h] = e
	c.mu.Unlock()
}
