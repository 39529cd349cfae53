package service_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/fixtures"
	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/gitrepo"
	"github.com/magnum-gitops/magnum-gitops/reconciler"
	"github.com/magnum-gitops/magnum-gitops/reconciler/httpapi"
	"github.com/magnum-gitops/magnum-gitops/reconciler/internal/gate"
	"github.com/magnum-gitops/magnum-gitops/reconciler/service"
)

// benchClusters is the size of the benchmark repository; the figures are for it.
const benchClusters = 10000

// clustersPerProject spreads the clusters over projects (Magnum namespaces), 500 for
// the 10,000.
const clustersPerProject = 20

var (
	seedMu sync.Mutex
	seeds  = map[int]seeded{} // by the number of clusters
)

// seeded is a seed repository, or why it could not be made; TestMain removes it.
type seeded struct {
	dir string
	err error
}

// benchEventOf is cluster i of a benchmark repository of the given size with n workers.
// The fixture is decoded once: the clients' own decoding would otherwise compete with the
// service for the CPU.
func benchEventOf(clusters, i, n int) *v1alpha1.ClusterEvent {
	fixtureOnce.Do(func() {
		data, err := fixtures.Events.ReadFile("events/01-prod-a-create.yaml")
		if err != nil {
			panic(err)
		}
		ev, err := v1alpha1.DecodeEvent(data)
		if err != nil {
			panic(err)
		}
		if fixtureJSON, err = json.Marshal(ev); err != nil {
			panic(err)
		}
	})
	var ev v1alpha1.ClusterEvent
	if err := json.Unmarshal(fixtureJSON, &ev); err != nil {
		panic(err)
	}
	ev.ID = fmt.Sprintf("bench-%05d-%d", i, n)
	ev.Cluster.UUID = fmt.Sprintf("3e9b7c52-1d4a-4f8e-9b6c-%012d", i)
	ev.Cluster.Name = fmt.Sprintf("b%05d", i)
	ev.Cluster.StackID = fmt.Sprintf("b%05d-stack", i)
	ev.Cluster.ProjectID = fmt.Sprintf("p%03d", i%(clusters/clustersPerProject))
	ev.NodeGroups[1].NodeCount = n
	return &ev
}

var (
	fixtureOnce sync.Once
	fixtureJSON []byte
)

// benchBody is benchEventOf(clusters, i, n) as the JSON body a client posts, filled into
// a template of it made once: the clients' own encoding, like their decoding, would
// otherwise compete with the service for the CPU. TestBenchBody holds the two equal.
func benchBody(clusters, i, n int) []byte {
	bodyOnce.Do(func() {
		ev := benchEventOf(clusters, 0, 0)
		ev.ID, ev.Cluster.UUID, ev.Cluster.Name = "@ID@", "@UUID@", "@NAME@"
		ev.Cluster.StackID, ev.Cluster.ProjectID = "@STACK@", "@PROJECT@"
		ev.NodeGroups[1].NodeCount = 987654321
		tmpl, err := json.Marshal(ev)
		if err != nil {
			panic(err)
		}
		bodyTemplate = string(tmpl)
	})
	return []byte(strings.NewReplacer(
		`"@ID@"`, fmt.Sprintf("%q", fmt.Sprintf("bench-%05d-%d", i, n)),
		`"@UUID@"`, fmt.Sprintf(`"3e9b7c52-1d4a-4f8e-9b6c-%012d"`, i),
		`"@NAME@"`, fmt.Sprintf(`"b%05d"`, i),
		`"@STACK@"`, fmt.Sprintf(`"b%05d-stack"`, i),
		`"@PROJECT@"`, fmt.Sprintf(`"p%03d"`, i%(clusters/clustersPerProject)),
		"987654321", strconv.Itoa(n),
	).Replace(bodyTemplate))
}

var (
	bodyOnce     sync.Once
	bodyTemplate string
)

// TestBenchBody: the benchmarks' clients post what the event would encode to.
func TestBenchBody(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ clusters, i, n int }{{10000, 0, 4}, {10000, 9999, 123456}, {1000, 517, 7}} {
		want, err := json.Marshal(benchEventOf(tc.clusters, tc.i, tc.n))
		if err != nil {
			t.Fatal(err)
		}
		if got := benchBody(tc.clusters, tc.i, tc.n); !bytes.Equal(got, want) {
			t.Errorf("benchBody(%d, %d, %d) =\n%s\nwant\n%s", tc.clusters, tc.i, tc.n, got, want)
		}
	}
}

// benchClient keeps a connection per client, as the driver shim's requests.Session does;
// http.DefaultClient keeps two idle connections a host, so 62 of 64 clients would dial
// anew for every event.
var benchClient = &http.Client{Transport: func() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 128
	return t
}()}

// seedRepo returns a bare repository holding the given number of rendered clusters
// (manifests, plaintext Secrets and records: about 100,000 files for 10,000), made once per
// size and benchmark binary.
func seedRepo(b *testing.B, clusters int) string {
	b.Helper()
	seedMu.Lock()
	defer seedMu.Unlock()
	sd, ok := seeds[clusters]
	if !ok {
		root, err := os.MkdirTemp("", "serve-bench-")
		if err != nil {
			b.Fatal(err)
		}
		sd.dir = filepath.Join(root, "seed.git")
		sd.err = seed(sd.dir, clusters)
		seeds[clusters] = sd
	}
	if sd.err != nil {
		b.Fatal(sd.err)
	}
	return sd.dir
}

// seed makes the bare repository dir and commits the rendered clusters to it.
func seed(dir string, clusters int) error {
	if out, err := exec.Command("git", "init", "-q", "--bare", "-b", "main", dir).CombinedOutput(); err != nil {
		return fmt.Errorf("%v: %s", err, out)
	}
	repo, err := gitrepo.Open(context.Background(), gitrepo.Options{URL: "file://" + dir, Author: gitrepo.Signature{Name: "b", Email: "b@example.org"}})
	if err != nil {
		return err
	}
	cfg := generator.DefaultConfig()
	p := &reconciler.Pipeline{Config: generator.MustSite(cfg), Secrets: reconciler.SecretPolicy{Plaintext: true}}
	change := gitrepo.Change{Subject: fmt.Sprintf("seed %d clusters", clusters), Files: map[string][]byte{}}
	for i := range clusters {
		ev := benchEventOf(clusters, i, 3)
		res, err := p.Render(context.Background(), ev)
		if err != nil {
			return err
		}
		pl, err := p.Plan(ev, res, nil) // nil: an empty repository
		if err != nil {
			return err
		}
		for f, c := range pl.Changes {
			change.Files[f] = c
		}
	}
	_, err = repo.Apply(context.Background(), change)
	return err
}

// cloneBare copies the seed of the given size so that every benchmark starts from the same
// repository.
func cloneBare(b *testing.B, clusters int) string {
	b.Helper()
	dst := filepath.Join(b.TempDir(), "r.git")
	if out, err := exec.Command("git", "clone", "-q", "--bare", seedRepo(b, clusters), dst).CombinedOutput(); err != nil {
		b.Fatalf("%v: %s", err, out)
	}
	return dst
}

func startBench(b *testing.B, remote string, maxGroup int) string {
	b.Helper()
	repo, err := gitrepo.Open(context.Background(), gitrepo.Options{URL: "file://" + remote, Author: gitrepo.Signature{Name: "b", Email: "b@example.org"}})
	if err != nil {
		b.Fatal(err)
	}
	cfg := generator.DefaultConfig()
	ready := make(chan string, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- service.Run(ctx, service.Options{
			Pipeline: &reconciler.Pipeline{Config: generator.MustSite(cfg), Secrets: reconciler.SecretPolicy{Plaintext: true}, Gate: &gate.Gate{}},
			Sink:     &reconciler.GitSink{Repo: repo}, Listen: "127.0.0.1:0", Tokens: httpapi.Tokens{[]byte(token)},
			MaxGroup: maxGroup, ResyncInterval: 0, Ready: ready,
			Log: discardLogger(),
		})
	}()
	b.Cleanup(func() { cancel(); <-done })
	var url string
	select {
	case addr := <-ready:
		url = "http://" + addr
	case err := <-done:
		b.Fatal(err)
	}
	// The resync at start re-renders every cluster; measure beside it, not with it.
	deadline := time.Now().Add(5 * time.Minute)
	for !resynced(url) {
		if time.Now().After(deadline) {
			b.Fatal("the resync at start did not finish")
		}
		time.Sleep(100 * time.Millisecond)
	}
	return url
}

// resynced reports whether the service finished a resync, from its /metrics.
func resynced(url string) bool {
	values, err := scrape(url)
	return err == nil && values["magnum_gitops_resync_duration_seconds_count"] > 0
}

func postJSON(url string, body []byte) error {
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/events", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := benchClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil { // so the connection is kept
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

var benchSeq atomic.Int64

// BenchmarkPostToPush: one event at a time, HTTP POST → pushed commit, on the
// 10,000-cluster repository, beside the same change through git add/commit/push in a
// checkout of the same repository.
func BenchmarkPostToPush(b *testing.B) {
	remote := cloneBare(b, benchClusters)
	b.Run("serve", func(b *testing.B) {
		url := startBench(b, remote, 1)
		lat := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			body := benchBody(benchClusters, i%benchClusters, 4+int(benchSeq.Add(1)))
			start := time.Now()
			if err := postJSON(url, body); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(start))
		}
		reportPercentiles(b, lat)
	})
	b.Run("git-cli", func(b *testing.B) {
		work, git := checkout(b, remote)
		lat := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			f := filepath.Join(work, fmt.Sprintf("clusters/magnum/magnum-p%03d/b%05d-stack/helmrelease.yaml", i%500, i%benchClusters))
			start := time.Now()
			if err := os.WriteFile(f, fmt.Appendf(nil, "# change %d\n", benchSeq.Add(1)), 0o644); err != nil {
				b.Fatal(err)
			}
			git("add", "-A")
			git("commit", "-q", "-m", "change")
			git("push", "-q", "origin", "HEAD:main")
			lat = append(lat, time.Since(start))
		}
		reportPercentiles(b, lat)
	})
}

// checkout clones remote into a work tree and returns it with a runner of git commands in
// it, as a person would use the CLI.
func checkout(b *testing.B, remote string) (work string, git func(args ...string)) {
	b.Helper()
	work = filepath.Join(b.TempDir(), "w")
	if out, err := exec.Command("git", "clone", "-q", remote, work).CombinedOutput(); err != nil {
		b.Fatalf("%v: %s", err, out)
	}
	return work, func(args ...string) {
		cmd := exec.Command("git", append([]string{"-C", work, "-c", "user.name=b", "-c", "user.email=b@example.org"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v %s", args, err, out)
		}
	}
}

// BenchmarkThroughput: 64 concurrent clients, each posting events for its own clusters,
// with group commit (up to 100 events a push) beside one push per event. Beside the
// service's own figures it reports the remote's: its git receive-pack processes are
// traced, and remote-ms is the mean time the remote worked on a push (see remoteSpans).
// A client waits for its event's push, so by Little's law 64 clients cannot get more than
// 64 / remote-ms events a second (ceiling-events/s), however fast the service. The
// remote's connectivity check walks the trees of the old head, so its time grows with the
// repository: clusters=1000 runs group commit on a repository of 1,000 clusters (50
// projects) to show by how much.
func BenchmarkThroughput(b *testing.B) {
	trace := filepath.Join(b.TempDir(), "trace2.json")
	b.Setenv("GIT_TRACE2_EVENT", trace) // inherited by the receive-pack go-git starts
	for _, group := range []int{1, 100} {
		b.Run(fmt.Sprintf("group=%d", group), func(b *testing.B) { throughput(b, trace, benchClusters, group) })
	}
	// A group the size of the clients closes as soon as all of them are back, not on the
	// window: where the remote is not the bound, that is the cycle's idle time.
	for _, group := range []int{64, 100} {
		b.Run(fmt.Sprintf("clusters=1000/group=%d", group), func(b *testing.B) { throughput(b, trace, 1000, group) })
	}
}

func throughput(b *testing.B, trace string, clusters, group int) {
	remote := cloneBare(b, clusters)
	url := startBench(b, remote, group)
	var next atomic.Int64
	var mu sync.Mutex
	var lat []time.Duration
	b.ResetTimer()
	start := time.Now()
	self, children := cpuTime()
	var wg sync.WaitGroup
	for c := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				n := next.Add(1)
				if n > int64(b.N) {
					return
				}
				body := benchBody(clusters, (c*150+int(n))%clusters, 4+int(benchSeq.Add(1)))
				t0 := time.Now()
				if err := postJSON(url, body); err != nil {
					b.Error(err)
					return
				}
				mu.Lock()
				lat = append(lat, time.Since(t0))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
	self2, children2 := cpuTime()
	reportCPU(b, self2-self, children2-children)
	reportPercentiles(b, lat)
	reportSteps(b, url)
	reportRemote(b, trace, remote)
}

// reportRemote reports the mean time the remote worked on a push, from the trace, and the
// ceiling it puts on 64 waiting clients.
func reportRemote(b *testing.B, trace, remote string) {
	spans, err := remoteSpans(trace, remote)
	if err != nil {
		b.Fatal(err)
	}
	if len(spans) == 0 {
		b.Fatal("no receive-pack of the benchmark's remote in the trace")
	}
	var sum, check time.Duration
	for _, s := range spans {
		sum += s.Total
		check += s.Check
	}
	mean := sum / time.Duration(len(spans))
	b.ReportMetric(float64(mean.Microseconds())/1000, "remote-ms")
	b.ReportMetric(float64((check/time.Duration(len(spans))).Microseconds())/1000, "remote-check-ms")
	b.ReportMetric(64/mean.Seconds(), "ceiling-events/s")
}

// reportCPU reports the CPU time spent per event by everything on the machine that takes
// part — the clients, the service and the remote's git processes — and the bound that puts
// on the events per second this machine's cores can carry, however well the work overlaps.
// The remote's share is reported apart: on a real deployment it runs on another machine.
func reportCPU(b *testing.B, self, remote time.Duration) {
	if self <= 0 {
		return
	}
	per := func(d time.Duration) float64 { return d.Seconds() / float64(b.N) }
	b.ReportMetric(per(self+remote)*1000, "cpu-ms/event")
	b.ReportMetric(per(remote)*1000, "remote-cpu-ms/event")
	b.ReportMetric(float64(runtime.NumCPU())/per(self+remote), "cpu-ceiling-events/s")
}

// BenchmarkResync: a resync of the 10,000 clusters as serve runs it: ResyncRecords queues
// the clusters whose directories may have moved, and each one's reconcile renders it again
// and diffs it against the repository; nothing changed, so no commit.
func BenchmarkResync(b *testing.B) {
	remote := cloneBare(b, benchClusters)
	repo, err := gitrepo.Open(context.Background(), gitrepo.Options{URL: "file://" + remote, Author: gitrepo.Signature{Name: "b", Email: "b@example.org"}})
	if err != nil {
		b.Fatal(err)
	}
	cfg := generator.DefaultConfig()
	// first is the resync of a service started with a new build (or settings), whose gate
	// knows nothing: every object is serialised once; again is every resync after it;
	// restart is the first resync of a service started again with the same build, whose
	// gate loads what the last one saved (the load is timed).
	for _, keep := range []struct {
		name       string
		gate, load bool
	}{{"first", false, false}, {"again", true, false}, {"restart", true, true}} {
		b.Run(keep.name, func(b *testing.B) {
			newGate := func() *gate.Gate {
				return &gate.Gate{Build: "bench", File: filepath.Join(b.TempDir(), "settled")}
			}
			p := &reconciler.Pipeline{Config: generator.MustSite(cfg), Secrets: reconciler.SecretPolicy{Plaintext: true}, Gate: newGate()}
			r, stop := runReconciler(p, repo)
			defer stop()
			if keep.gate {
				if _, err := resyncThrough(context.Background(), p, r, repo); err != nil {
					b.Fatal(err)
				}
				if err := p.Gate.Save(); err != nil {
					b.Fatal(err)
				}
			}
			saved := p.Gate.File
			runtime.GC()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				switch {
				case !keep.gate:
					b.StopTimer()
					p.Gate = newGate()
					b.StartTimer()
				case keep.load:
					p.Gate = &gate.Gate{Build: "bench", File: saved}
					if err := p.Gate.Load(); err != nil {
						b.Fatal(err)
					}
				}
				changed, err := resyncThrough(context.Background(), p, r, repo)
				if err != nil {
					b.Fatal(err)
				}
				if changed != 0 {
					b.Fatalf("%d clusters changed; want 0", changed)
				}
			}
			b.StopTimer()
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(after.HeapSys)/(1<<20), "heap-MB")
		})
	}
}

// reportSteps reports the service's own view from its /metrics: the mean group size and,
// per event, the mean time its group spent building commits and pushing. Where the wall
// time of a group goes tells the CPU-bound steps from the waiting ones.
func reportSteps(b *testing.B, url string) {
	val, err := scrape(url)
	if err != nil {
		b.Fatal(err)
	}
	mean := func(name, labels string) float64 {
		if n := val[name+"_count"+labels]; n > 0 {
			return val[name+"_sum"+labels] / n
		}
		return 0
	}
	b.ReportMetric(mean("magnum_gitops_group_size", ""), "events/group")
	for _, step := range []string{"render", "commit", "push"} {
		b.ReportMetric(mean("magnum_gitops_step_duration_seconds", `{step="`+step+`"}`)*1000, step+"-ms")
	}
}

func reportPercentiles(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

// runReconciler runs a Reconciler of p committing to repo, as serve does, until stop.
func runReconciler(p *reconciler.Pipeline, repo *gitrepo.Repo) (*reconciler.Reconciler, func()) {
	r := &reconciler.Reconciler{Pipeline: p, Sink: &reconciler.GitSink{Repo: repo}}
	r.Start()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	return r, func() { cancel(); <-done }
}

// resyncThrough resyncs repo as serve does: the records ResyncRecords queues, reconciled
// by r. It returns how many clusters changed.
func resyncThrough(ctx context.Context, p *reconciler.Pipeline, r *reconciler.Reconciler, repo *gitrepo.Repo) (int, error) {
	changed := 0
	var failed error
	err := p.ResyncRecords(ctx, repo, r.ResyncOptions(nil, func(_ *reconciler.ResyncRecord, sum reconciler.Summary) {
		switch {
		case sum.Err() != nil:
			failed = errors.Join(failed, sum.Err())
		case !sum.NoOp:
			changed++
		}
	}))
	return changed, errors.Join(err, failed)
}

// BenchmarkResyncCommit: a new version moves the HelmRelease of every one of 1,000
// clusters (here a longer Flux timeout), and resync commits them all: one commit per
// cluster, a Reconciler's default MaxGroup (100) of them to a push, through the
// Reconciler serve runs.
// One op is the whole resync: reading the records, rendering and committing them.
func BenchmarkResyncCommit(b *testing.B) {
	ctx := context.Background()
	cfg := generator.DefaultConfig()
	cfg.Flux.Timeout = generator.Duration{Duration: cfg.Flux.Timeout.Duration + 2*time.Minute}
	const clusters = 1000
	for b.Loop() {
		b.StopTimer()
		repo, err := gitrepo.Open(ctx, gitrepo.Options{URL: "file://" + cloneBare(b, clusters), Author: gitrepo.Signature{Name: "b", Email: "b@example.org"}})
		if err != nil {
			b.Fatal(err)
		}
		p := &reconciler.Pipeline{Config: generator.MustSite(cfg), Secrets: reconciler.SecretPolicy{Plaintext: true}, Gate: &gate.Gate{}}
		r, stop := runReconciler(p, repo)
		b.StartTimer()
		changed, err := resyncThrough(ctx, p, r, repo)
		if err != nil || changed != clusters {
			b.Fatalf("%d clusters changed, %v; want %d", changed, err, clusters)
		}
		b.StopTimer()
		stop()
		b.StartTimer()
	}
	b.ReportMetric(float64(clusters*b.N)/b.Elapsed().Seconds(), "clusters/s")
}

// traceEvent is the part of a Git trace2 event (GIT_TRACE2_EVENT) remoteSpans reads.
type traceEvent struct {
	Event string    `json:"event"`
	SID   string    `json:"sid"`
	Time  time.Time `json:"time"`
	Argv  []string  `json:"argv"`
}

// remoteSpans reads a trace2 event file and returns, for each git receive-pack of the
// repository at remote, how long the remote worked on the pushed pack: from the start of
// the index-pack (or unpack-objects) that reads the pack as it arrives to the exit of
// receive-pack, after the connectivity check, the ref update and gc --auto. The time
// before — starting receive-pack, advertising refs, waiting for the pusher to pack — is
// the pusher's, not counted. A child's session id is its parent's, "/" and its own.
// Check is the part spent in the connectivity check: the rev-list receive-pack runs, which
// walks the trees of the old head, so it grows with the repository, not with the push.
func remoteSpans(path, remote string) ([]remoteSpan, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	pushes := map[string]bool{}      // receive-pack sessions of remote
	unpack := map[string]time.Time{} // session → start of its pack reader
	exits := map[string]time.Time{}  // session → exit of receive-pack
	checks := map[string]string{}    // session → its rev-list's session
	starts := map[string]time.Time{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var e traceEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, err
		}
		switch e.Event {
		case "start":
			if len(e.Argv) > 0 && strings.HasSuffix(e.Argv[0], "git-receive-pack") && slices.Contains(e.Argv, remote) {
				pushes[e.SID] = true
			}
			starts[e.SID] = e.Time
			if i := strings.LastIndexByte(e.SID, '/'); i > 0 && (slices.Contains(e.Argv, "index-pack") || slices.Contains(e.Argv, "unpack-objects")) {
				unpack[e.SID[:i]] = e.Time
			}
			if i := strings.LastIndexByte(e.SID, '/'); i > 0 && len(e.Argv) > 1 && e.Argv[1] == "rev-list" {
				checks[e.SID[:i]] = e.SID
			}
		case "exit":
			exits[e.SID] = e.Time
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	var spans []remoteSpan
	for sid := range pushes {
		start, ok := unpack[sid]
		end, done := exits[sid]
		if !ok || !done {
			continue
		}
		span := remoteSpan{Total: end.Sub(start)}
		if c, ok := checks[sid]; ok {
			if end, ok := exits[c]; ok {
				span.Check = end.Sub(starts[c])
			}
		}
		spans = append(spans, span)
	}
	return spans, nil
}

// remoteSpan is the remote's work on one push, and the connectivity check's part of it.
type remoteSpan struct{ Total, Check time.Duration }

// TestRemoteSpans reads a trace of two pushes to the remote — one from go-git (a
// receive-pack of its own), one from the git CLI (receive-pack a child of git push), the
// first with index-pack, the second with unpack-objects — and one push to another
// repository, which is not counted.
func TestRemoteSpans(t *testing.T) {
	t.Parallel()
	lines := []string{
		`{"event":"start","sid":"A","time":"2026-11-23T10:00:00.000000Z","argv":["git-receive-pack","/r.git"]}`,
		`{"event":"start","sid":"A/B","time":"2026-11-23T10:00:00.030000Z","argv":["/usr/lib/git-core/git","index-pack","--stdin"]}`,
		`{"event":"exit","sid":"A/B","time":"2026-11-23T10:00:00.040000Z"}`,
		`{"event":"start","sid":"A/C","time":"2026-11-23T10:00:00.041000Z","argv":["/usr/lib/git-core/git","rev-list","--objects"]}`,
		`{"event":"start","sid":"P","time":"2026-11-23T10:00:00.050000Z","argv":["git","push","origin"]}`,
		`{"event":"start","sid":"P/D","time":"2026-11-23T10:00:00.055000Z","argv":["git-receive-pack","/r.git"]}`,
		`{"event":"exit","sid":"A/C","time":"2026-11-23T10:00:00.080000Z"}`,
		`{"event":"exit","sid":"A","time":"2026-11-23T10:00:00.090000Z"}`,
		`{"event":"start","sid":"P/D/E","time":"2026-11-23T10:00:00.100000Z","argv":["/usr/lib/git-core/git","unpack-objects","--pack_header=2,8"]}`,
		`{"event":"exit","sid":"P/D","time":"2026-11-23T10:00:00.125000Z"}`,
		`{"event":"start","sid":"F","time":"2026-11-23T10:00:01.000000Z","argv":["git-receive-pack","/other.git"]}`,
		`{"event":"start","sid":"F/G","time":"2026-11-23T10:00:01.010000Z","argv":["/usr/lib/git-core/git","index-pack","--stdin"]}`,
		`{"event":"exit","sid":"F","time":"2026-11-23T10:00:02.000000Z"}`,
	}
	file := filepath.Join(t.TempDir(), "trace.json")
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	spans, err := remoteSpans(file, "/r.git")
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(spans, func(a, b remoteSpan) int { return int(a.Total - b.Total) })
	want := []remoteSpan{{Total: 25 * time.Millisecond}, {Total: 60 * time.Millisecond, Check: 39 * time.Millisecond}}
	if diff := cmp.Diff(want, spans); diff != "" {
		t.Errorf("spans (-want +got):\n%s", diff)
	}
}
