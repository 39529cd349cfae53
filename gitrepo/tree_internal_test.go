package gitrepo

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// TestCompareEntries holds compareEntries to the comparison of Git's sort keys, on names
// made of the bytes that sort just around '/'.
func TestCompareEntries(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	const alpha = "!-.0a~"
	entry := func() object.TreeEntry {
		var b strings.Builder
		for n := 1 + r.IntN(4); n > 0; n-- {
			b.WriteByte(alpha[r.IntN(len(alpha))])
		}
		mode := filemode.Regular
		if r.IntN(2) == 0 {
			mode = filemode.Dir
		}
		return object.TreeEntry{Name: b.String(), Mode: mode}
	}
	for range 200000 {
		a, b := entry(), entry()
		if got, want := compareEntries(a, b), strings.Compare(entryKey(a), entryKey(b)); got != want {
			t.Fatalf("compareEntries(%q %v, %q %v) = %d, want %d", a.Name, a.Mode, b.Name, b.Mode, got, want)
		}
	}
}

// TestEncodeTree holds encodeTree to go-git's object.Tree.Encode, byte for byte, for every
// mode a tree can hold and for trees of 0 to 600 entries.
func TestEncodeTree(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	modes := []filemode.FileMode{filemode.Dir, filemode.Regular, filemode.Executable, filemode.Symlink, filemode.Submodule}
	for _, n := range []int{0, 1, 5, 600} {
		var tree object.Tree
		for i := range n {
			e := object.TreeEntry{Name: fmt.Sprintf("e%04d-%x", i, r.Uint32()), Mode: modes[r.IntN(len(modes))]}
			for j := range e.Hash {
				e.Hash[j] = byte(r.Uint32())
			}
			tree.Entries = append(tree.Entries, e)
		}
		want := &plumbing.MemoryObject{}
		if err := tree.Encode(want); err != nil {
			t.Fatal(err)
		}
		got := encodeTree(tree.Entries)
		if !bytes.Equal(got, mustRead(t, want)) {
			t.Fatalf("%d entries: encodeTree differs from object.Tree.Encode", n)
		}
	}
}

func mustRead(t *testing.T, o plumbing.EncodedObject) []byte {
	t.Helper()
	rd, err := o.Reader()
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	b, err := io.ReadAll(rd)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
