package gitrepo_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/magnum-gitops/magnum-gitops/gitrepo"
)

const benchClusters = 10000

// benchSeq makes every benchmark iteration's content new, across repeated invocations,
// so no iteration is a no-op.
var benchSeq atomic.Int64

var (
	bigOnce sync.Once
	bigDir  string
	bigErr  error
)

// TestMain removes the benchmarks' shared remote (bigRemote) when the binary ends: it
// lives outside any test's temporary directory.
func TestMain(m *testing.M) {
	code := m.Run()
	if bigDir != "" {
		_ = os.RemoveAll(filepath.Dir(bigDir))
	}
	os.Exit(code)
}

// bigRemote returns a bare repository with 10,000 cluster directories of 4 files each
// (40,000 files), made once per test binary with one plumbing commit.
func bigRemote(b *testing.B) string {
	b.Helper()
	bigOnce.Do(func() {
		root, err := os.MkdirTemp("", "gitrepo-bench-")
		if err != nil {
			bigErr = err
			return
		}
		bigDir = filepath.Join(root, "big.git")
		if out, err := exec.Command("git", "init", "-q", "--bare", "-b", "main", bigDir).CombinedOutput(); err != nil {
			bigErr = fmt.Errorf("%v: %s", err, out)
			return
		}
		o := testOptions("file://" + bigDir)
		r, err := gitrepo.Open(context.Background(), o)
		if err != nil {
			bigErr = err
			return
		}
		c := gitrepo.Change{Subject: "seed 10000 clusters", Files: map[string][]byte{}}
		for i := 0; i < benchClusters; i++ {
			dir := fmt.Sprintf("clusters/magnum/magnum-p%03d/cluster-%05d", i%500, i)
			for _, f := range []string{"helmrelease.yaml", "kustomization.yaml", "secret-ca.sops.yaml", "secret-cloud-credentials.sops.yaml"} {
				c.Files[dir+"/"+f] = []byte(fmt.Sprintf("# %s of cluster %d\nkind: Example\nspec:\n  replicas: 3\n", f, i))
			}
		}
		_, bigErr = r.Apply(context.Background(), c)
	})
	if bigErr != nil {
		b.Fatal(bigErr)
	}
	return bigDir
}

// threeFileChange changes the HelmRelease and kustomization of one cluster and adds a file.
func threeFileChange(i int) map[string]string {
	dir := fmt.Sprintf("clusters/magnum/magnum-p%03d/cluster-%05d", i%500, i%benchClusters)
	return map[string]string{
		dir + "/helmrelease.yaml":   fmt.Sprintf("kind: HelmRelease\nspec:\n  replicas: %d\n", i+4),
		dir + "/kustomization.yaml": fmt.Sprintf("resources: [helmrelease.yaml]\n# rev %d\n", i),
		dir + "/secret-extra.yaml":  fmt.Sprintf("rev: %d\n", i),
	}
}

// BenchmarkCommitPush compares one 3-file change, committed and pushed, in a 40,000-file
// repository: gitrepo (plumbing commit + O(changed objects) push) against the git CLI
// (git add -A && git commit && git push) in a checkout of the same repository. Both run in
// the same benchmark invocation; compare their ns/op (and p50-ms).
func BenchmarkCommitPush(b *testing.B) {
	remote := bigRemote(b)
	b.Run("gitrepo", func(b *testing.B) {
		r, err := gitrepo.Open(context.Background(), testOptions("file://"+remote))
		if err != nil {
			b.Fatal(err)
		}
		var times []time.Duration
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			st := time.Now()
			res, err := r.Apply(context.Background(), change("bench "+strconv.Itoa(i), threeFileChange(int(benchSeq.Add(1)))))
			if err != nil || res.NoOp {
				b.Fatalf("%+v %v", res, err)
			}
			times = append(times, time.Since(st))
		}
		reportP50(b, times)
	})
	b.Run("git-cli", func(b *testing.B) {
		work := b.TempDir()
		if out, err := exec.Command("git", "clone", "-q", remote, work).CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
		run := func(args ...string) {
			cmd := exec.Command("git", args...)
			cmd.Dir = work
			cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=b", "GIT_AUTHOR_EMAIL=b@example.org", "GIT_COMMITTER_NAME=b", "GIT_COMMITTER_EMAIL=b@example.org")
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("git %v: %v\n%s", args, err, out)
			}
		}
		run("pull", "-q")
		var times []time.Duration
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			st := time.Now()
			for p, v := range threeFileChange(int(benchSeq.Add(1))) {
				os.MkdirAll(filepath.Join(work, filepath.Dir(p)), 0o755)
				if err := os.WriteFile(filepath.Join(work, p), []byte(v), 0o644); err != nil {
					b.Fatal(err)
				}
			}
			run("add", "-A")
			run("commit", "-q", "-m", "bench")
			run("push", "-q", "origin", "HEAD:main")
			times = append(times, time.Since(st))
		}
		reportP50(b, times)
	})
}

func reportP50(b *testing.B, times []time.Duration) {
	if len(times) == 0 {
		return
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms")
}

// BenchmarkBurst applies 1,000 changes to different clusters, batched 100 to a commit,
// and reports changes per second (the clone is made before timing). A fresh process that
// clones the 40,000-file repository into memory and runs one burst reports its peak
// resident memory (peak-RSS-MB).
func BenchmarkBurst(b *testing.B) {
	remote := bigRemote(b)
	r, err := gitrepo.Open(context.Background(), testOptions("file://"+remote))
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		st := time.Now()
		if err := burst(r, int(benchSeq.Add(1000))); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(1000/time.Since(st).Seconds(), "changes/s")
	}
	b.StopTimer()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperBurstProcess$")
	cmd.Env = append(os.Environ(), "GITREPO_BURST_URL=file://"+remote)
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("burst subprocess: %v\n%s", err, out)
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		b.ReportMetric(float64(ru.Maxrss)/1024, "peak-RSS-MB")
	}
}

// burst applies 1,000 changes to different clusters in 10 commits of 100.
func burst(r *gitrepo.Repo, round int) error {
	for batch := 0; batch < 10; batch++ {
		var cs []gitrepo.Change
		for j := 0; j < 100; j++ {
			n := round + batch*100 + j
			cs = append(cs, change("burst "+strconv.Itoa(n), threeFileChange(n)))
		}
		if _, err := r.Apply(context.Background(), cs...); err != nil {
			return err
		}
	}
	return nil
}

// TestHelperBurstProcess runs one burst for BenchmarkBurst's memory measurement.
func TestHelperBurstProcess(t *testing.T) {
	url := os.Getenv("GITREPO_BURST_URL")
	if url == "" {
		t.Skip("helper process for BenchmarkBurst")
	}
	r, err := gitrepo.Open(context.Background(), testOptions(url))
	if err != nil {
		t.Fatal(err)
	}
	if err := burst(r, 5_000_000+int(time.Now().UnixNano()%1_000_000)*1000); err != nil {
		t.Fatal(err)
	}
}
