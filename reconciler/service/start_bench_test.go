package service_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/gitrepo"
	"github.com/magnum-gitops/magnum-gitops/internal/config"
	"github.com/magnum-gitops/magnum-gitops/reconciler"
	"github.com/magnum-gitops/magnum-gitops/reconciler/httpapi"
	"github.com/magnum-gitops/magnum-gitops/reconciler/internal/gate"
	"github.com/magnum-gitops/magnum-gitops/reconciler/service"
)

// startCommits is the history BenchmarkServeStart starts from: 10,000 clusters that have
// run for a year.
const startCommits = 100000

var (
	historyOnce sync.Once
	historyDir  string
	historyErr  error
)

// longHistory returns the 10,000-cluster seed with startCommits commits on top, one every
// five minutes up to now, each a change of one cluster's HelmRelease carrying an event id
// (the ledger reads them), made with git fast-import. Every other commit puts the
// HelmRelease back, so the head's tree is the seed's: a resync finds nothing to change.
func longHistory(b *testing.B) string {
	b.Helper()
	seed := seedRepo(b, benchClusters)
	historyOnce.Do(func() {
		root, err := os.MkdirTemp("", "serve-history-")
		if err != nil {
			historyErr = err
			return
		}
		historyDir = filepath.Join(root, "history.git")
		if out, err := exec.Command("git", "clone", "-q", "--bare", seed, historyDir).CombinedOutput(); err != nil {
			historyErr = fmt.Errorf("%v: %s", err, out)
			return
		}
		tree, err := exec.Command("git", "-C", historyDir, "ls-tree", "-r", "main").Output()
		if err != nil {
			historyErr = err
			return
		}
		var releases [][2]string // path, blob
		for line := range strings.SplitSeq(strings.TrimSpace(string(tree)), "\n") {
			meta, p, _ := strings.Cut(line, "\t")
			if strings.HasSuffix(p, "/helmrelease.yaml") {
				releases = append(releases, [2]string{p, strings.Fields(meta)[2]})
			}
		}
		var s bytes.Buffer
		start := time.Now().Add(-startCommits * 5 * time.Minute).Unix()
		fmt.Fprintf(&s, "reset refs/heads/main\nfrom refs/heads/main^0\n")
		for n := 1; n <= startCommits; n++ {
			r := releases[((n+1)/2)%len(releases)] // an odd commit changes it, the next puts it back
			fmt.Fprintf(&s, "commit refs/heads/main\ncommitter magnum-gitops <m@example.org> %d +0000\n", start+int64(n)*300)
			msg := fmt.Sprintf("magnum: resize_cluster %d\n\nMagnum-Event-ID: history-%06d\nMagnum-Operation: resize_cluster\n", n, n)
			fmt.Fprintf(&s, "data %d\n%s\n", len(msg), msg)
			if n%2 == 1 {
				c := fmt.Sprintf("# resized by event history-%06d\n", n)
				fmt.Fprintf(&s, "M 100644 inline %s\ndata %d\n%s\n", r[0], len(c), c)
			} else {
				fmt.Fprintf(&s, "M 100644 %s %s\n", r[1], r[0])
			}
		}
		cmd := exec.Command("git", "-C", historyDir, "fast-import", "--quiet")
		cmd.Stdin = &s
		if out, err := cmd.CombinedOutput(); err != nil {
			historyErr = fmt.Errorf("fast-import: %v: %s", err, out)
			return
		}
		if out, err := exec.Command("git", "-C", historyDir, "gc", "-q").CombinedOutput(); err != nil {
			historyErr = fmt.Errorf("gc: %v: %s", err, out)
		}
	})
	if historyErr != nil {
		b.Fatal(historyErr)
	}
	return historyDir
}

// BenchmarkServeStart: serve's first start (an empty cache directory) from 10,000
// clusters and 100,000 commits, until it listens, with the default history
// (config.DefaultHistory) and with the whole history, beside `git clone --bare` of the
// same remote. serve runs in a child process, so that its peak resident memory is its
// own: rss-MB is the child's VmHWM once it listens, and resynced-rss-MB once its resync at
// start is done (resync-s after listening). With moved=all, the child runs a newer
// magnum-gitops that renders every HelmRelease differently: its resync commits all
// 10,000 clusters, to a copy of the remote.
func BenchmarkServeStart(b *testing.B) {
	remote := longHistory(b)
	for _, tc := range []struct {
		name    string
		history string
		moved   bool
	}{
		{"serve/history=default", "default", false},
		{"serve/history=whole", "whole", false},
		{"serve/history=default/moved=all", "default", true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var rss, resynced, took float64
			for b.Loop() {
				rss, resynced, took = startChild(b, remote, tc.history, tc.moved)
			}
			b.ReportMetric(rss, "rss-MB")
			b.ReportMetric(resynced, "resynced-rss-MB")
			b.ReportMetric(took, "resync-s")
		})
	}
	b.Run("git-clone-bare", func(b *testing.B) {
		for b.Loop() {
			dir := filepath.Join(b.TempDir(), "clone.git")
			if out, err := exec.Command("git", "clone", "-q", "--bare", "file://"+remote, dir).CombinedOutput(); err != nil {
				b.Fatalf("%v: %s", err, out)
			}
		}
	})
}

// startChild runs TestServeStartChild in a child process and waits for it to report.
func startChild(b *testing.B, remote, history string, moved bool) (rss, resynced, took float64) {
	b.Helper()
	b.StopTimer()
	if moved { // the child pushes: a copy (hard links) keeps the remote as the others see it
		dst := filepath.Join(b.TempDir(), "remote.git")
		if out, err := exec.Command("git", "clone", "-q", "--bare", remote, dst).CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
		git(b, dst, "config", "receive.autogc", "false") // no gc left running when the directory goes
		remote = dst
	}
	head := git(b, remote, "rev-parse", "main")
	b.StartTimer()
	cmd := exec.Command(os.Args[0], "-test.run", "^TestServeStartChild$", "-test.v")
	cmd.Env = append(os.Environ(), "SERVE_START_REMOTE="+remote, "SERVE_START_HISTORY="+history, "SERVE_START_CACHE="+b.TempDir(), fmt.Sprintf("SERVE_START_MOVED=%t", moved))
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 2 && f[0] == "LISTENING":
			b.StopTimer() // until the next start: the resync is not part of it
			rss, _ = strconv.ParseFloat(f[1], 64)
		case len(f) == 3 && f[0] == "RESYNCED":
			resynced, _ = strconv.ParseFloat(f[1], 64)
			took, _ = strconv.ParseFloat(f[2], 64)
		}
	}
	if err := cmd.Wait(); err != nil || rss == 0 || resynced == 0 {
		b.Fatalf("child: %v\n%s", err, stderr.String())
	}
	// The resync did what the case says: nothing, or a commit for every cluster.
	want := 0
	if moved {
		want = benchClusters
	}
	if n := git(b, remote, "rev-list", "--count", head+"..main"); n != strconv.Itoa(want) {
		b.Fatalf("the resync at start made %s commits, want %d", n, want)
	}
	b.StartTimer()
	return rss, resynced, took
}

// git runs git in the repository dir and returns its output, trimmed.
func git(b *testing.B, dir string, args ...string) string {
	b.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).Output()
	if err != nil {
		b.Fatalf("git %v: %v", args, err)
	}
	return strings.TrimSpace(string(out))
}

// TestServeStartChild is BenchmarkServeStart's child: it opens the remote as serve does,
// with the history asked for, runs the service until it listens and its resync at start
// is done, printing its peak resident memory at each, and stops.
func TestServeStartChild(t *testing.T) {
	remote := os.Getenv("SERVE_START_REMOTE")
	if remote == "" {
		t.Skip("run by BenchmarkServeStart")
	}
	o := gitrepo.Options{URL: "file://" + remote, CacheDir: os.Getenv("SERVE_START_CACHE"),
		Author: gitrepo.Signature{Name: "b", Email: "b@example.org"}}
	if os.Getenv("SERVE_START_HISTORY") == "default" {
		h := config.DefaultHistory // what serve clones without git.history
		o.History = gitrepo.History{Commits: h.Commits, Since: h.Since.Duration, MaxCommits: h.MaxCommits}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	repo, err := gitrepo.Open(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	cfg := generator.DefaultConfig()
	if os.Getenv("SERVE_START_MOVED") == "true" {
		cfg.Flux.Timeout = generator.Duration{Duration: cfg.Flux.Timeout.Duration + 2*time.Minute}
	}
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- service.Run(ctx, service.Options{
			Pipeline: &reconciler.Pipeline{Config: generator.MustSite(cfg), Secrets: reconciler.SecretPolicy{Plaintext: true}, Gate: &gate.Gate{}},
			Sink:     &reconciler.GitSink{Repo: repo}, Listen: "127.0.0.1:0", Tokens: httpapi.Tokens{[]byte(token)},
			Ready: ready, Log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		})
	}()
	var url string
	select {
	case addr := <-ready:
		url = "http://" + addr
	case err := <-done:
		t.Fatal(err)
	}
	fmt.Printf("LISTENING %.0f\n", peakRSS(t))
	stopProfile := profileHeapPeak(t, os.Getenv("SERVE_START_HEAPPROFILE"))
	listening := time.Now()
	for deadline := time.Now().Add(10 * time.Minute); !resynced(url); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no resync within 10 minutes")
		}
	}
	fmt.Printf("RESYNCED %.0f %.1f\n", peakRSS(t), time.Since(listening).Seconds())
	stopProfile()
	cancel()
	<-done
}

// peakRSS is the process's peak resident memory (VmHWM), in MiB.
func peakRSS(t *testing.T) float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb / 1024
		}
	}
	t.Fatal("no VmHWM in /proc/self/status")
	return 0
}

// profileHeapPeak, when path is set, writes there the heap profile taken when the heap in
// use was largest, sampled every half second until the returned function is called: where
// the resync's peak memory goes (SERVE_START_HEAPPROFILE=file with -test.bench).
func profileHeapPeak(t *testing.T, path string) (stop func()) {
	if path == "" {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		var peak uint64
		var ms runtime.MemStats
		for {
			select {
			case <-done:
				return
			case <-time.After(500 * time.Millisecond):
			}
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse <= peak {
				continue
			}
			peak = ms.HeapInuse
			var b bytes.Buffer
			if err := pprof.Lookup("heap").WriteTo(&b, 0); err == nil {
				_ = os.WriteFile(path, b.Bytes(), 0o644)
			}
			fmt.Fprintf(os.Stderr, "heap in use %d MiB, sys %d MiB\n", ms.HeapInuse>>20, ms.Sys>>20)
		}
	}()
	return func() { close(done); <-finished }
}
