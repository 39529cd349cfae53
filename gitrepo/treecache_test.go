package gitrepo

import (
	"fmt"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// treeOf is a tree of n entries named with width characters each.
func treeOf(n, width int) []object.TreeEntry {
	e := make([]object.TreeEntry, n)
	for i := range e {
		e[i].Name = fmt.Sprintf("%0*d", width, i)
	}
	return e
}

func TestTreeCacheBounds(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		trees   int // trees put, each of entries entries
		entries int
		kept    func(c *treeCache, hashes []plumbing.Hash) bool
	}{
		{"a few small trees are all kept", 10, 6, func(c *treeCache, hs []plumbing.Hash) bool { return c.has(hs...) }},
		{"a tree wider than an eighth of the budget is not kept", 1, treeCacheBytes/8/(treeEntryBytes+8) + 1, func(c *treeCache, hs []plumbing.Hash) bool { return !c.has(hs...) }},
		// Thousands of 500-entry trees, as a resync that rewrites the fleet writes: the
		// cache stays within its budget and keeps the most recent.
		{"wide trees stay within the budget", 5000, 500, func(c *treeCache, hs []plumbing.Hash) bool { return c.has(hs[len(hs)-1]) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := &treeCache{cur: map[plumbing.Hash][]object.TreeEntry{}}
			e := treeOf(tc.entries, 8)
			var hs []plumbing.Hash
			for i := range tc.trees {
				h := plumbing.ComputeHash(plumbing.TreeObject, []byte(fmt.Sprint(i)))
				c.put(h, e)
				hs = append(hs, h)
			}
			if !tc.kept(c, hs) {
				t.Error("the cache does not hold what it should")
			}
			if got := c.bytes(); got > treeCacheBytes {
				t.Errorf("the cache holds %d bytes, over its budget of %d", got, treeCacheBytes)
			}
		})
	}
}

func TestTreeCacheKeepsWhatIsRead(t *testing.T) {
	t.Parallel()
	c := &treeCache{cur: map[plumbing.Hash][]object.TreeEntry{}}
	n := 0
	rotate := func() { // puts wide trees until the newer generation is replaced
		for gen := c.cur; ; n++ {
			c.put(plumbing.ComputeHash(plumbing.TreeObject, []byte(fmt.Sprint("wide", n))), treeOf(500, 40))
			if !sameMap(gen, c.cur) {
				return
			}
		}
	}
	first := plumbing.ComputeHash(plumbing.TreeObject, []byte("first"))
	c.put(first, treeOf(6, 8))
	rotate()
	if _, ok := c.old[first]; !ok {
		t.Fatal("after one rotation the tree is not in the older generation")
	}
	if _, err := c.entries(nil, first); err != nil { // a hit: no store is read
		t.Fatal(err)
	}
	rotate()
	if !c.has(first) {
		t.Error("a tree read in the last generation was dropped")
	}
	rotate()
	rotate()
	if c.has(first) {
		t.Error("a tree read in no generation for two rotations is still kept")
	}
}

// sameMap reports whether a and b are the same map.
func sameMap(a, b map[plumbing.Hash][]object.TreeEntry) bool {
	return fmt.Sprintf("%p", a) == fmt.Sprintf("%p", b)
}

// has reports whether every tree of hs is cached.
func (c *treeCache) has(hs ...plumbing.Hash) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, h := range hs {
		_, cur := c.cur[h]
		_, old := c.old[h]
		if !cur && !old {
			return false
		}
	}
	return true
}

// bytes is what both generations hold, counted as add counts it.
func (c *treeCache) bytes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, m := range []map[plumbing.Hash][]object.TreeEntry{c.cur, c.old} {
		for _, e := range m {
			for i := range e {
				n += treeEntryBytes + len(e[i].Name)
			}
		}
	}
	return n
}
