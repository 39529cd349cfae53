package gitrepo

import (
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
)

// blobCacheBytes bounds the file contents kept: the files of the few hundred clusters
// planned most recently, a few MiB.
const blobCacheBytes = 8 << 20

// blobs holds file contents by blob hash. A blob's hash names its content, so a cached
// blob is right for every repository and never goes stale. A plan reads the same files
// more than once (the record to know the cluster, again to keep it; a file the gate finds
// unchanged, again to diff it), and every read of the object store inflates the object
// while it holds the store's lock, which readers on other goroutines wait for.
var blobs = &blobCache{cur: map[plumbing.Hash][]byte{}}

// blobCache is a bounded map of contents, safe for concurrent use: two generations, the
// older one dropped when the newer is full, so what is in use stays without tracking
// recency for each read.
type blobCache struct {
	mu       sync.Mutex
	cur, old map[plumbing.Hash][]byte
	size     int // bytes in cur
}

// get returns the content of blob h, which nobody may modify.
func (c *blobCache) get(h plumbing.Hash) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if b, ok := c.cur[h]; ok {
		return b, true
	}
	b, ok := c.old[h]
	if ok {
		c.add(h, b)
	}
	return b, ok
}

// put keeps the content of blob h; nobody may modify it afterwards.
func (c *blobCache) put(h plumbing.Hash, b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.add(h, b)
}

// add keeps b in the newer generation; c.mu is held.
func (c *blobCache) add(h plumbing.Hash, b []byte) {
	if len(b) > blobCacheBytes/64 {
		return // a large file would push out many small ones
	}
	if c.size+len(b) > blobCacheBytes/2 {
		c.old, c.cur, c.size = c.cur, make(map[plumbing.Hash][]byte, len(c.cur)), 0
	}
	c.cur[h] = b
	c.size += len(b)
}
