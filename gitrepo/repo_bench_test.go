package gitrepo_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/magnum-gitops/magnum-gitops/gitrepo"
)

// Size of the history BenchmarkOpen clones: clusters, and commits after the first (each
// changes one cluster's HelmRelease and kustomization, as an event does).
const (
	historyClusters = 2000
	historyCommits  = 4000
)

var (
	historyOnce sync.Once
	historyDir  string
	historyErr  error
)

// historyRemote returns a bare repository of historyClusters clusters and
// historyCommits+1 commits, made once per test binary with git fast-import.
func historyRemote(b *testing.B) string {
	b.Helper()
	historyOnce.Do(func() {
		root, err := os.MkdirTemp("", "gitrepo-history-")
		if err != nil {
			historyErr = err
			return
		}
		historyDir = filepath.Join(root, "history.git")
		if out, err := exec.Command("git", "init", "-q", "--bare", "-b", "main", historyDir).CombinedOutput(); err != nil {
			historyErr = fmt.Errorf("%v: %s", err, out)
			return
		}
		var s bytes.Buffer
		commit := func(n int, files map[string]string) {
			fmt.Fprintf(&s, "commit refs/heads/main\ncommitter m <m@example.org> %d +0000\ndata <<EOF\ncommit %d\nEOF\n", 1700000000+n, n)
			for p, c := range files {
				fmt.Fprintf(&s, "M 100644 inline %s\ndata %d\n%s\n", p, len(c), c)
			}
		}
		seed := map[string]string{}
		for i := range historyClusters {
			dir := fmt.Sprintf("clusters/magnum/magnum-p%03d/cluster-%05d", i%100, i)
			for _, f := range []string{"helmrelease.yaml", "kustomization.yaml", "secret-ca.sops.yaml", "secret-cloud-credentials.sops.yaml"} {
				seed[dir+"/"+f] = fmt.Sprintf("# %s of cluster %d\nkind: Example\nspec:\n  replicas: 3\n%s", f, i, bytes.Repeat([]byte("x"), 1500))
			}
		}
		commit(0, seed)
		for n := 1; n <= historyCommits; n++ {
			i := n % historyClusters
			dir := fmt.Sprintf("clusters/magnum/magnum-p%03d/cluster-%05d", i%100, i)
			commit(n, map[string]string{
				dir + "/helmrelease.yaml":   fmt.Sprintf("kind: HelmRelease\nspec:\n  replicas: %d\n%s", n, bytes.Repeat([]byte("y"), 1500)),
				dir + "/kustomization.yaml": fmt.Sprintf("resources: [helmrelease.yaml]\n# rev %d\n", n),
			})
		}
		cmd := exec.Command("git", "-C", historyDir, "fast-import", "--quiet")
		cmd.Stdin = &s
		if out, err := cmd.CombinedOutput(); err != nil {
			historyErr = fmt.Errorf("fast-import: %v: %s", err, out)
		}
	})
	if historyErr != nil {
		b.Fatal(historyErr)
	}
	return historyDir
}

// BenchmarkOpen clones a history of historyCommits commits, the clone kept in memory (an
// empty CacheDir) and on disk (a new CacheDir each time, as serve's first start), and
// reports the heap the open Repo retains: in memory, go-git's store holds every object of
// the history, so the heap grows with every commit the service makes; on disk it does not.
func BenchmarkOpen(b *testing.B) {
	remote := historyRemote(b)
	for _, tc := range []struct {
		name string
		disk bool
	}{{"memory", false}, {"disk", true}} {
		b.Run(tc.name, func(b *testing.B) {
			var retained uint64
			for b.Loop() {
				o := testOptions("file://" + remote)
				if tc.disk {
					o.CacheDir = b.TempDir()
				}
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				r, err := gitrepo.Open(context.Background(), o)
				if err != nil {
					b.Fatal(err)
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				if after.HeapInuse > before.HeapInuse {
					retained = max(retained, after.HeapInuse-before.HeapInuse)
				}
				runtime.KeepAlive(r)
			}
			b.ReportMetric(float64(retained)/(1<<20), "retained-MiB")
		})
	}
}

// BenchmarkStart measures the clone a service starts from against the git CLI on the same
// remote (historyRemote), in the same run: a first start (Open with an empty CacheDir), of
// the whole history and of serve's default History, beside `git clone --bare`, and a restart (Open with the CacheDir a previous run left, the
// remote one commit further) beside `git clone --depth 1`, the least a fresh clone of the
// head can cost. Compare ns/op between the pairs.
func BenchmarkStart(b *testing.B) {
	remote := historyRemote(b)
	url := "file://" + remote
	gitClone := func(b *testing.B, args ...string) {
		dir := filepath.Join(b.TempDir(), "clone.git")
		cmd := exec.Command("git", append(append([]string{"clone", "-q"}, args...), url, dir)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
	}
	b.Run("first/gitrepo", func(b *testing.B) {
		for b.Loop() {
			o := testOptions(url)
			o.CacheDir = b.TempDir()
			if _, err := gitrepo.Open(context.Background(), o); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("first/gitrepo-history", func(b *testing.B) {
		// serve's default (config.DefaultHistory): the history's commits are years old, so
		// the first 1,000 are all it takes.
		for b.Loop() {
			o := testOptions(url)
			o.CacheDir = b.TempDir()
			o.History, o.Now = gitrepo.History{Commits: 1000, Since: 10 * time.Minute, MaxCommits: 20000}, time.Now
			if _, err := gitrepo.Open(context.Background(), o); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("first/git-clone-bare", func(b *testing.B) {
		for b.Loop() {
			gitClone(b, "--bare")
		}
	})
	b.Run("restart/gitrepo", func(b *testing.B) {
		// A copy of the remote, moved by a commit while the service is down each time.
		moving := filepath.Join(b.TempDir(), "moving.git")
		work := filepath.Join(b.TempDir(), "work")
		for _, args := range [][]string{{"clone", "-q", "--bare", remote, moving}, {"clone", "-q", moving, work}} {
			if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
				b.Fatalf("%v: %s", err, out)
			}
		}
		o := testOptions("file://" + moving)
		o.CacheDir = b.TempDir()
		if _, err := gitrepo.Open(context.Background(), o); err != nil {
			b.Fatal(err)
		}
		n := 0
		for b.Loop() {
			b.StopTimer()
			n++
			if err := os.WriteFile(filepath.Join(work, "restarts.txt"), []byte(fmt.Sprint(n)), 0o600); err != nil {
				b.Fatal(err)
			}
			for _, args := range [][]string{{"add", "restarts.txt"}, {"-c", "user.name=m", "-c", "user.email=m@example.org", "commit", "-q", "-m", "restart"}, {"push", "-q", "origin", "HEAD:main"}} {
				if out, err := exec.Command("git", append([]string{"-C", work}, args...)...).CombinedOutput(); err != nil {
					b.Fatalf("%v: %s", err, out)
				}
			}
			b.StartTimer()
			if _, err := gitrepo.Open(context.Background(), o); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("restart/git-clone-depth-1", func(b *testing.B) {
		for b.Loop() {
			gitClone(b, "--bare", "--depth", "1")
		}
	})
}
