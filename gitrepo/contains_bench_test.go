package gitrepo_test

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// BenchmarkContains: the question the service asks of every cluster it reports on ("has
// Flux applied this cluster's last commit?") on a busy branch: 5,000 commits 10 ms apart
// (500 events a second for 50 s), all within the clock skew. applied: Flux's revision is
// the head and each iteration asks about another commit of the last 2,500, as a status
// sweep does. pending: Flux's revision is the middle commit and each iteration asks about
// a later one, not applied yet.
func BenchmarkContains(b *testing.B) {
	const n = 5000
	busy := busyHistory(b, n)
	for _, bc := range []struct {
		name   string
		head   int
		commit func(i int) int
		want   bool
	}{
		{"applied", n - 1, func(i int) int { return n/2 + i%(n/2) }, true},
		{"pending", n / 2, func(i int) int { return n/2 + 1 + i%(n/2-1) }, false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			r := open(b, testOptions("file://"+busy.dir))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				ok, err := r.Contains(busy.commits[bc.head], busy.commits[bc.commit(i)])
				if err != nil || ok != bc.want {
					b.Fatal(ok, err)
				}
			}
		})
	}
}

// history is a repository on disk and its main branch's commits.
type history struct {
	dir     string
	commits []string // oldest first
}

// busyHistory makes a bare repository whose main branch is n commits 10 ms apart, each
// changing one file, with git fast-import.
func busyHistory(b *testing.B, n int) history {
	b.Helper()
	dir := bareRepo(b, b.TempDir()+"/busy.git")
	var in strings.Builder
	start := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	for i := range n {
		when := start.Add(time.Duration(i) * 10 * time.Millisecond).Unix()
		msg := fmt.Sprintf("event %d", i)
		file := fmt.Sprintf("node_count: %d\n", i)
		fmt.Fprintf(&in, "commit refs/heads/main\ncommitter b <b@example.org> %d +0000\ndata %d\n%s\n", when, len(msg), msg)
		fmt.Fprintf(&in, "M 100644 inline clusters/c%d.yaml\ndata %d\n%s\n", i%100, len(file), file)
	}
	cmd := exec.Command("git", "fast-import", "--quiet")
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(in.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("git fast-import: %v\n%s", err, out)
	}
	h := history{dir: dir, commits: make([]string, n)}
	out := git(b, dir, "rev-list", "--reverse", "main")
	copy(h.commits, strings.Fields(out))
	if len(strings.Fields(out)) != n {
		b.Fatalf("fast-import made %d commits, want %d", len(strings.Fields(out)), n)
	}
	return h
}
