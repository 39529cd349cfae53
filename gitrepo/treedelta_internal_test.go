package gitrepo

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// TestTreeDelta: Git's delta applier (go-git's PatchDelta) makes the target tree from the
// base and treeDelta's delta, for random edits of trees from empty to 5,000 entries (a
// copy of more than 64 KiB included), and a few changed entries of a wide tree give a
// delta a small fraction of its size.
func TestTreeDelta(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(5, 6))
	entry := func(i int) object.TreeEntry {
		e := object.TreeEntry{Name: fmt.Sprintf("magnum-p%05d", i), Mode: filemode.Dir}
		if r.IntN(3) == 0 {
			e.Name += ".yaml"
			e.Mode = filemode.Regular
		}
		for j := range e.Hash {
			e.Hash[j] = byte(r.Uint32())
		}
		return e
	}
	for _, n := range []int{0, 1, 3, 50, 500, 5000} {
		for _, edits := range []int{0, 1, 2, 30} {
			base := make([]object.TreeEntry, n)
			for i := range base {
				base[i] = entry(i)
			}
			target := slices.Clone(base)
			for range edits {
				switch k := r.IntN(3); {
				case k == 0 && len(target) > 0: // a changed entry
					i := r.IntN(len(target))
					target[i].Hash[r.IntN(20)]++
				case k == 1 && len(target) > 0: // a removed one
					i := r.IntN(len(target))
					target = slices.Delete(target, i, i+1)
				default: // an added one
					target = append(target, entry(n+r.IntN(1000)))
				}
			}
			slices.SortFunc(target, compareEntries)
			target = slices.CompactFunc(target, func(a, b object.TreeEntry) bool { return a.Name == b.Name })
			b, tg := encodeTree(base), encodeTree(target)
			if len(b) == 0 || len(tg) == 0 {
				continue // Git never writes an empty tree; the pack never deltas one
			}
			delta := treeDelta(b, treeIndex(b), tg)
			got, err := packfile.PatchDelta(b, delta)
			if err != nil {
				t.Fatalf("%d entries, %d edits: %v", n, edits, err)
			}
			if !bytes.Equal(got, tg) {
				t.Fatalf("%d entries, %d edits: the delta does not make the target", n, edits)
			}
			if n >= 500 && edits <= 2 && len(delta) > len(tg)/50 {
				t.Errorf("%d entries, %d edits: delta of %d bytes for a %d-byte tree", n, edits, len(delta), len(tg))
			}
		}
	}
}

// TestTreeDeltaMalformed: a target that is not a tree gets no delta, and a base that is
// not one no index, so the pack falls back to a general diff.
func TestTreeDeltaMalformed(t *testing.T) {
	t.Parallel()
	good := encodeTree([]object.TreeEntry{{Name: "a", Mode: filemode.Regular}})
	for _, bad := range [][]byte{[]byte("100644 a"), []byte("100644 a\x00short"), []byte("no-space\x00" + string(make([]byte, 20)))} {
		if d := treeDelta(good, treeIndex(good), bad); d != nil {
			t.Errorf("treeDelta(%q) = %q, want nil", bad, d)
		}
		if idx := treeIndex(bad); idx != nil {
			t.Errorf("treeIndex(%q) = %v, want nil", bad, idx)
		}
	}
}
