package gitrepo

import (
	"bytes"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// TestBlobCache: a blob is found while it is in either generation; filling the newer one
// drops the older; a hit in the older one moves it up; a blob too large to keep is not kept.
func TestBlobCache(t *testing.T) {
	h := func(i int) plumbing.Hash {
		return plumbing.ComputeHash(plumbing.BlobObject, []byte{byte(i), byte(i >> 8)})
	}
	blob := make([]byte, blobCacheBytes/64) // the largest kept
	k := blobCacheBytes / 2 / len(blob)     // blobs to a generation
	for _, tc := range []struct {
		name  string
		puts  int // blobs 1..puts, in order
		hitAt int // after this many puts, blob 1 is read; 0: never
		found map[int]bool
	}{
		{name: "kept", puts: 2, found: map[int]bool{1: true, 2: true}},
		{name: "the older generation is still read", puts: k + 1, found: map[int]bool{1: true, k + 1: true}},
		{name: "two fills drop the first", puts: 2*k + 1, found: map[int]bool{1: false, k + 1: true, 2*k + 1: true}},
		{name: "a hit moves it up", puts: 2*k + 1, hitAt: k + 1, found: map[int]bool{1: true, 2: false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &blobCache{cur: map[plumbing.Hash][]byte{}}
			for n := 1; n <= tc.puts; n++ {
				c.put(h(n), blob)
				if n == tc.hitAt {
					if _, ok := c.get(h(1)); !ok {
						t.Fatal("blob 1 gone before its hit")
					}
				}
			}
			for n, want := range tc.found {
				if _, ok := c.get(h(n)); ok != want {
					t.Errorf("blob %d found %t, want %t", n, ok, want)
				}
			}
		})
	}
	c := &blobCache{cur: map[plumbing.Hash][]byte{}}
	c.put(h(1), make([]byte, len(blob)+1))
	if _, ok := c.get(h(1)); ok {
		t.Error("a blob larger than a 64th of the cache was kept")
	}
}

// TestReadPathCopies: what a read returns is the caller's: changing it changes no later
// read of the same content, from the cache or not.
func TestReadPathCopies(t *testing.T) {
	content := []byte("kind: HelmRelease\n")
	r, tip, _ := chain(t, []map[string][]byte{{"a/hr.yaml": content, "b/hr.yaml": content}})
	tree, err := r.treeOf(tip)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"a/hr.yaml", "b/hr.yaml", "a/hr.yaml"} {
		b, ok, err := readPath(r.store, tree, p)
		if err != nil || !ok || !bytes.Equal(b, content) {
			t.Fatalf("%s: %q %t %v; want %q", p, b, ok, err, content)
		}
		b[0] = 'X'
	}
}
