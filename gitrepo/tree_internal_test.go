package gitrepo

import (
	"math/rand/v2"
	"strings"
	"testing"

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
