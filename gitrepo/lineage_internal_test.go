package gitrepo

import (
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/memory"
)

// commitLine stores n commits, each the first parent of the next and a second apart
// from start, and returns their ids oldest first. parent, when not zero, is the first
// commit's parent.
func commitLine(t *testing.T, s *memory.Storage, parent plumbing.Hash, start time.Time, n int, tag string) []plumbing.Hash {
	t.Helper()
	var ids []plumbing.Hash
	for i := range n {
		sig := object.Signature{Name: "t", Email: "t@example.org", When: start.Add(time.Duration(i) * time.Second)}
		c := &object.Commit{Author: sig, Committer: sig, Message: tag, TreeHash: plumbing.ZeroHash}
		if !parent.IsZero() {
			c.ParentHashes = []plumbing.Hash{parent}
		}
		obj := s.NewEncodedObject()
		if err := c.Encode(obj); err != nil {
			t.Fatal(err)
		}
		id, err := s.SetEncodedObject(obj)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
		parent = id
	}
	return ids
}

// checkNumbers holds the index to its invariant: the commits it holds are numbered in
// order, and nothing else is in it.
func checkNumbers(t *testing.T, l *lineage) {
	t.Helper()
	if len(l.pos) != len(l.order) {
		t.Fatalf("%d numbers for %d commits", len(l.pos), len(l.order))
	}
	for i, id := range l.order {
		if l.pos[id] != l.base+int64(i) {
			t.Fatalf("commit %d is numbered %d, want %d", i, l.pos[id], l.base+int64(i))
		}
	}
}

// TestLineage: heads that continue the line extend it by the commits between; a head that
// forks off it is not indexed; one that reaches none of it starts it again, where a commit
// asked about only ever extends it; the index never holds more than its limit, dropping
// the oldest, and stops at the time bound.
func TestLineage(t *testing.T) {
	t.Parallel()
	s := memory.NewStorage()
	start := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	line := commitLine(t, s, plumbing.ZeroHash, start, 40, "line")
	l := &lineage{limit: 16}

	// Only as far back as the time bound.
	if err := l.extend(s, line[9], start.Add(5*time.Second), true); err != nil {
		t.Fatal(err)
	}
	checkNumbers(t, l)
	if len(l.order) != 5 || l.order[0] != line[5] || l.order[4] != line[9] {
		t.Fatalf("after the first head: %d commits from %v", len(l.order), l.order)
	}
	// Continuing heads add what is between, and trimming keeps the newest.
	for _, h := range []int{12, 20, 39} {
		if err := l.extend(s, line[h], start, true); err != nil {
			t.Fatal(err)
		}
		checkNumbers(t, l)
		if l.order[len(l.order)-1] != line[h] || len(l.order) > l.limit {
			t.Fatalf("after head %d: newest %v, %d commits", h, l.order[len(l.order)-1], len(l.order))
		}
	}
	if _, ok := l.index(line[20]); ok {
		t.Error("the oldest commits were kept past the limit")
	}
	p38, _ := l.index(line[38])
	p30, ok := l.index(line[30])
	if !ok || p30 >= p38 {
		t.Errorf("numbers out of order: %d, %d (%v)", p30, p38, ok)
	}

	// A head forking off the line (from commit 35) is left to the walk.
	fork := commitLine(t, s, line[35], start.Add(time.Hour), 3, "fork")
	before := len(l.order)
	if err := l.extend(s, fork[2], start, true); err != nil {
		t.Fatal(err)
	}
	if _, ok := l.index(fork[2]); ok || len(l.order) != before {
		t.Errorf("a forked head was indexed (%d commits, from %d)", len(l.order), before)
	}
	// Without restart (a commit asked about, not a head): one that continues the line is
	// numbered after it; one from another root leaves the line as it is.
	more := commitLine(t, s, line[39], start.Add(40*time.Second), 2, "more")
	other := commitLine(t, s, plumbing.ZeroHash, start.Add(2*time.Hour), 4, "other")
	for _, c := range []plumbing.Hash{more[1], other[3], fork[2]} {
		if err := l.extend(s, c, start, false); err != nil {
			t.Fatal(err)
		}
	}
	checkNumbers(t, l)
	p39, _ := l.index(line[39])
	if p, ok := l.index(more[1]); !ok || p != p39+2 {
		t.Errorf("a commit continuing the line: number %d (%v), want %d", p, ok, p39+2)
	}
	for _, c := range []plumbing.Hash{other[3], fork[2]} {
		if _, ok := l.index(c); ok {
			t.Errorf("%v is numbered without being on the line", c)
		}
	}
	if _, ok := l.index(line[39]); !ok {
		t.Error("a commit off the line, asked without restart, dropped the line")
	}

	// A head that reaches nothing of the line (another root) starts it again.
	if err := l.extend(s, other[3], start, true); err != nil {
		t.Fatal(err)
	}
	checkNumbers(t, l)
	if _, ok := l.index(line[39]); ok || len(l.order) != 4 {
		t.Errorf("after another root: %d commits, the old line kept: %v", len(l.order), ok)
	}
	// A head that is not in the store, or older than the bound, changes nothing.
	for _, h := range []plumbing.Hash{plumbing.NewHash("1234567890123456789012345678901234567890"), line[39]} {
		if err := l.extend(s, h, start.Add(3*time.Hour), true); err != nil {
			t.Fatal(err)
		}
		if len(l.order) != 4 || l.order[3] != other[3] {
			t.Errorf("head %v changed the index: %v", h, l.order)
		}
	}
}
