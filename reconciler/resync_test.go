package reconciler_test

import (
	"context"
	"errors"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/gitrepo"
	"github.com/magnum-gitops/magnum-gitops/reconciler"
	"github.com/magnum-gitops/magnum-gitops/reconciler/internal/gate"
)

// TestResync: a resync of an unchanged repository plans nothing; a hand edit and an
// upgrade of the generator (here: a changed site setting) plan exactly the files whose
// rendering moved, never a Secret; committing the plans makes the next resync empty again.
func TestResync(t *testing.T) {
	t.Parallel()
	p, sink, dir := committer(t)
	ctx := context.Background()
	for _, n := range []string{"01-prod-a-create.yaml", "02-prod-a-resize-workers.yaml", "17-keystone-auth.yaml", "18-ovn-allowed-cidrs-chart-0.24.yaml", "25-flatcar-cilium.yaml"} {
		if _, err := sink.Apply(ctx, p, event(t, n)); err != nil {
			t.Fatalf("%s: %v", n, err)
		}
	}
	commits := func() int { return strings.Count(gitOut(t, dir, "log", "--format=%H", "main"), "\n") }
	before := commits()

	var mu sync.Mutex
	var calls []int
	var records []*reconciler.ResyncRecord
	err := p.ResyncRecords(ctx, sink.Repo, reconciler.ResyncOptions{Batch: 1,
		Progress: func(done, total int) {
			mu.Lock()
			defer mu.Unlock()
			calls = append(calls, done)
			if total != 4 {
				t.Errorf("progress total %d, want 4 clusters", total)
			}
		},
		Queue: func(_ context.Context, recs []*reconciler.ResyncRecord) error {
			records = append(records, recs...)
			return nil
		},
	})
	if err != nil || len(records) != 4 {
		t.Fatalf("without a gate: %d records queued, %v; want every cluster's", len(records), err)
	}
	if !slices.Equal(calls, []int{1, 2, 3, 4}) {
		t.Errorf("progress calls %v, want 1..4 in order", calls)
	}
	for _, sum := range resync(ctx, sink, p, records) {
		if sum.Err() != nil || !sum.NoOp {
			t.Errorf("unchanged repository: %+v; want nothing committed", sum)
		}
	}
	if got := commits(); got != before {
		t.Errorf("the resync of an unchanged repository made %d commits", got-before)
	}

	// A hand edit of one HelmRelease: resync plans that one file back.
	hr := path.Join(p.Config.Flux.Path, "magnum-9f3c1b2a4d5e4f6a8b7c6d5e4f3a2b1c/prod-a-2b7xq4mzkd5h", generator.HelmReleaseFile)
	orig, ok, err := sink.Repo.ReadFile(hr)
	if err != nil || !ok {
		t.Fatalf("reading %s: %v %v", hr, ok, err)
	}
	edited := strings.Replace(string(orig), "machineCount: 5", "machineCount: 9", 1)
	if edited == string(orig) {
		t.Fatalf("no machineCount: 5 in %s:\n%s", hr, orig)
	}
	if _, err := sink.Repo.Apply(ctx, gitrepo.Change{Subject: "hand edit", Files: map[string][]byte{hr: []byte(edited)}}); err != nil {
		t.Fatal(err)
	}
	plans, err := resyncPlans(ctx, p, sink.Repo)
	if err != nil || len(plans) != 1 {
		t.Fatalf("after a hand edit: %d plans, %v; want 1", len(plans), err)
	}
	if got := plans[0].Paths(); !slices.Equal(got, []string{hr}) {
		t.Errorf("planned %v, want only %s", got, hr)
	}
	out, err := resyncOne(ctx, sink, p, plans[0].record)
	if err != nil || out.NoOp {
		t.Fatalf("committing the resync: %+v %v", out, err)
	}
	msg := gitOut(t, dir, "log", "-1", "--format=%B", "main")
	for _, want := range []string{"magnum-gitops: resync cluster prod-a", "Magnum-Resync: true"} {
		if !strings.Contains(msg, want) {
			t.Errorf("resync commit message lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "Magnum-Event-ID") {
		t.Errorf("a resync commit carries an event id:\n%s", msg)
	}
	if now, _, _ := sink.Repo.ReadFile(hr); string(now) != string(orig) {
		t.Error("resync did not restore the rendered HelmRelease")
	}

	// A new magnum-gitops that renders differently: every HelmRelease moves, no Secret does.
	cfg := *p.Config
	cfg.Flux.Timeout = generator.Duration{Duration: 7 * time.Minute}
	upgraded := *p
	upgraded.Config = &cfg
	plans, err = resyncPlans(ctx, &upgraded, sink.Repo)
	if err != nil || len(plans) != 4 {
		t.Fatalf("after the upgrade: %d plans, %v; want 4", len(plans), err)
	}
	for _, pl := range plans {
		for _, f := range pl.Paths() {
			if path.Base(f) != generator.HelmReleaseFile {
				t.Errorf("%s: resync changes %s; only the HelmRelease moved", pl.Result.ReleaseName, f)
			}
		}
	}
	resyncAll(t, sink, &upgraded, plans)
	if plans, err := resyncPlans(ctx, &upgraded, sink.Repo); err != nil || len(plans) != 0 {
		t.Errorf("after committing the resync: %d plans, %v; want none", len(plans), err)
	}
	if got := commits() - before; got != 1+1+4 {
		t.Errorf("%d commits since the events, want 6 (hand edit, its resync, 4 upgrades)", got)
	}

	// Switching to the per-namespace layout: resync writes each namespace's GitRepository
	// and Kustomization once (with its first cluster's plan) and changes nothing else.
	layout := cfg
	layout.Flux.Layout, layout.Flux.Git.URL = generator.LayoutPerNamespace, "https://git.example.org/cloud/magnum-clusters.git"
	perNS := upgraded
	perNS.Config = &layout
	plans, err = resyncPlans(ctx, &perNS, sink.Repo)
	if err != nil || len(plans) == 0 {
		t.Fatalf("switching the layout: %d plans, %v", len(plans), err)
	}
	written := map[string]bool{}
	for _, pl := range plans {
		for _, f := range pl.Paths() {
			if path.Dir(f) != path.Join(layout.Flux.Path, generator.FluxDir) {
				t.Errorf("%s: switching the layout changes %s", pl.Result.ReleaseName, f)
			}
			written[f] = true
		}
	}
	resyncAll(t, sink, &perNS, plans)
	if len(written) != 2*2 { // two projects among the fixtures
		t.Errorf("switching the layout wrote %d files, want a GitRepository and a Kustomization for each of 2 namespaces: %v", len(written), written)
	}
	if plans, err := resyncPlans(ctx, &perNS, sink.Repo); err != nil || len(plans) != 0 {
		t.Errorf("after the layout's resync: %d plans, %v; want none", len(plans), err)
	}
	gitOut(t, dir, "fsck", "--strict")
}

// TestResyncYieldsToNewerEvents: a resync planned before an event was committed commits
// nothing for that cluster, rather than the older record it rendered.
func TestResyncYieldsToNewerEvents(t *testing.T) {
	t.Parallel()
	p, sink, dir := created(t)
	ctx := context.Background()
	upgraded := upgrade(p)
	plans, err := resyncPlans(ctx, upgraded, sink.Repo)
	if err != nil || len(plans) != 1 {
		t.Fatalf("%d plans, %v; want 1", len(plans), err)
	}
	// Another replica commits the next event of the cluster meanwhile.
	other := replica(t, dir)
	resize := event(t, "02-prod-a-resize-workers.yaml")
	if out, err := other.Apply(ctx, p, resize); err != nil || out.NoOp() {
		t.Fatalf("resize: %+v %v", out, err)
	}
	head := gitOut(t, dir, "rev-parse", "main")
	out, err := resyncOne(ctx, sink, upgraded, plans[0].record)
	if err != nil || !out.NoOp {
		t.Errorf("resync after a newer event: %+v %v; want no commit", out, err)
	}
	if now := gitOut(t, dir, "rev-parse", "main"); now != head {
		t.Errorf("resync committed over the newer event:\n%s", gitOut(t, dir, "log", "-2", "--stat", "main"))
	}
	record := path.Join(generator.ClusterDir(plans[0].Result.Root, plans[0].Result.Namespace, plans[0].Result.ReleaseName), reconciler.RecordFile)
	if got := gitOut(t, dir, "show", "main:"+record); !strings.Contains(got, `"id": "`+resize.ID+`"`) {
		t.Errorf("the record lost the newer event:\n%s", got)
	}
	// The next resync renders the newer record.
	plans, err = resyncPlans(ctx, upgraded, sink.Repo)
	if err != nil || len(plans) != 1 {
		t.Fatalf("after the event: %d plans, %v", len(plans), err)
	}
	if out, err := resyncOne(ctx, sink, upgraded, plans[0].record); err != nil || out.NoOp {
		t.Errorf("resync of the newer record: %+v %v", out, err)
	}
}

// TestResyncTornRead: an event that lands between resync's read of a record and its plan
// is not undone: the commit is made only while the branch holds the record as read.
func TestResyncTornRead(t *testing.T) {
	t.Parallel()
	p, sink, dir := created(t)
	ctx := context.Background()
	upgraded := upgrade(p)
	other := replica(t, dir)
	resize := event(t, "02-prod-a-resize-workers.yaml")
	torn := &tornLister{repo: sink.Repo, once: func() {
		if out, err := other.Apply(ctx, p, resize); err != nil || out.NoOp() {
			t.Errorf("resize: %+v %v", out, err)
		}
		if err := sink.Repo.Fetch(ctx); err != nil {
			t.Error(err)
		}
	}}
	records, err := resyncRecords(ctx, upgraded, torn)
	if err != nil || len(records) != 1 {
		t.Fatalf("%d records, %v", len(records), err)
	}
	if out, err := resyncOne(ctx, sink, upgraded, records[0]); err != nil || !out.NoOp {
		t.Errorf("resync over a record that moved: %+v %v; want no commit", out, err)
	}
	record := records[0].Path
	if got := gitOut(t, dir, "show", "main:"+record); !strings.Contains(got, `"id": "`+resize.ID+`"`) {
		t.Errorf("resync undid the event; history:\n%s", gitOut(t, dir, "log", "-3", "--format=%h %s", "main"))
	}
}

// tornLister reads the live branch, as a gitrepo.Tree without snapshots does, and lets an
// event land right after resync read a record: the plan is then diffed against a newer
// head than the record came from.
type tornLister struct {
	repo *gitrepo.Repo
	once func()
}

func (r *tornLister) ReadFile(p string) ([]byte, bool, error) {
	b, ok, err := r.repo.ReadFile(p)
	if path.Base(p) == reconciler.RecordFile && r.once != nil {
		f := r.once
		r.once = nil
		f()
	}
	return b, ok, err
}
func (r *tornLister) ListDir(dir string) ([]string, error)   { return r.repo.ListDir(dir) }
func (r *tornLister) ListFiles(dir string) ([]string, error) { return r.repo.ListFiles(dir) }

// fleet is a repository of four clusters of two projects, committed by p.
func fleet(t *testing.T) (*reconciler.Pipeline, *reconciler.GitSink) {
	t.Helper()
	p, sink, _ := committer(t)
	for _, n := range []string{"01-prod-a-create.yaml", "17-keystone-auth.yaml", "18-ovn-allowed-cidrs-chart-0.24.yaml", "25-flatcar-cilium.yaml"} {
		if _, err := sink.Apply(context.Background(), p, event(t, n)); err != nil {
			t.Fatalf("%s: %v", n, err)
		}
	}
	return p, sink
}

// resyncRecords collects every record a resync queues.
func resyncRecords(ctx context.Context, p *reconciler.Pipeline, repo gitrepo.Tree) ([]*reconciler.ResyncRecord, error) {
	var records []*reconciler.ResyncRecord
	err := p.ResyncRecords(ctx, repo, reconciler.ResyncOptions{Queue: func(_ context.Context, recs []*reconciler.ResyncRecord) error {
		records = append(records, recs...)
		return nil
	}})
	return records, err
}

// resyncPlan is a cluster's resync plan and the record it renders.
type resyncPlan struct {
	*reconciler.Plan
	record *reconciler.ResyncRecord
}

// resyncPlans plans every record a resync queues on repo, as resync --dry-run does, and
// returns the plans that change something.
func resyncPlans(ctx context.Context, p *reconciler.Pipeline, repo gitrepo.Tree) ([]resyncPlan, error) {
	records, err := resyncRecords(ctx, p, repo)
	if err != nil {
		return nil, err
	}
	var plans []resyncPlan
	for _, rec := range records {
		pl, err := p.PlanResync(ctx, rec, repo)
		if err != nil {
			return nil, err
		}
		if pl != nil {
			plans = append(plans, resyncPlan{pl, rec})
		}
	}
	return plans, nil
}

// TestResyncBatches: ResyncRecords hands the records over in batches of at most Batch, in
// record order (the same for any batch), while it reads: when the k-th batch is handed
// over, at most k+1 batches' records are read, whatever the total. A Queue that fails
// stops it.
func TestResyncBatches(t *testing.T) {
	t.Parallel()
	p, sink := fleet(t)
	ctx := context.Background()
	upgraded := upgrade(p)
	all, err := resyncRecords(ctx, upgraded, sink.Repo)
	if err != nil || len(all) != 4 {
		t.Fatalf("%d records, %v; want 4", len(all), err)
	}
	var order []string
	for _, rec := range all {
		order = append(order, rec.Path)
	}
	failed := errors.New("push refused")
	for _, tc := range []struct {
		name    string
		batch   int
		failAt  int   // the Queue call that fails (1-based); 0: none
		batches []int // sizes of the batches handed over
	}{
		{name: "one at a time", batch: 1, batches: []int{1, 1, 1, 1}},
		{name: "three to a batch", batch: 3, batches: []int{3, 1}},
		{name: "the default", batches: []int{4}},
		{name: "a Queue fails", batch: 1, failAt: 1, batches: []int{1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var (
				mu      sync.Mutex
				done    int
				got     []string
				batches []int
			)
			read := sync.NewCond(&mu)
			err := upgraded.ResyncRecords(ctx, sink.Repo, reconciler.ResyncOptions{Batch: tc.batch,
				Progress: func(d, _ int) { mu.Lock(); done = d; read.Broadcast(); mu.Unlock() },
				Queue: func(_ context.Context, recs []*reconciler.ResyncRecord) error {
					batches = append(batches, len(recs))
					if k := len(batches); tc.batch > 0 {
						// While batch k is reconciled, the next one is read and waits:
						// the records held are bounded when it has.
						bound := min((k+1)*tc.batch, len(all))
						mu.Lock()
						for done < bound {
							read.Wait()
						}
						if done > bound {
							t.Errorf("batch %d queued with %d records read; want at most %d", k, done, bound)
						}
						mu.Unlock()
					}
					for _, rec := range recs {
						got = append(got, rec.Path)
					}
					if len(batches) == tc.failAt {
						return failed
					}
					return nil
				},
			})
			if tc.failAt > 0 {
				if !errors.Is(err, failed) {
					t.Errorf("error %v, want the Queue's", err)
				}
			} else if err != nil || !slices.Equal(got, order) {
				t.Errorf("records %v, %v; want %v", got, err, order)
			}
			if !slices.Equal(batches, tc.batches) {
				t.Errorf("batches %v, want %v", batches, tc.batches)
			}
		})
	}
	if err := upgraded.ResyncRecords(ctx, sink.Repo, reconciler.ResyncOptions{}); reconciler.KindOf(err) != reconciler.KindInvalid {
		t.Errorf("no Queue: %v, want an invalid call", err)
	}
}

// TestResyncInFlight: with InFlight 2, two Queue calls run at once (the second batch is
// handed over while the first is still queued), never three, and every record is handed
// over once.
func TestResyncInFlight(t *testing.T) {
	t.Parallel()
	p, sink := fleet(t)
	upgraded := upgrade(p)
	var (
		mu        sync.Mutex
		running   int
		most      int
		got       []string
		bothBegan = make(chan struct{})
	)
	err := upgraded.ResyncRecords(context.Background(), sink.Repo, reconciler.ResyncOptions{Batch: 1, InFlight: 2,
		Queue: func(_ context.Context, recs []*reconciler.ResyncRecord) error {
			mu.Lock()
			running++
			most = max(most, running)
			if running == 2 {
				select {
				case <-bothBegan:
				default:
					close(bothBegan)
				}
			}
			for _, rec := range recs {
				got = append(got, rec.Path)
			}
			mu.Unlock()
			// The first call returns only once a second one runs beside it.
			select {
			case <-bothBegan:
			case <-time.After(10 * time.Second):
				t.Error("no second Queue call while the first ran")
			}
			mu.Lock()
			running--
			mu.Unlock()
			return nil
		},
	})
	if err != nil || len(got) != 4 || most != 2 {
		t.Errorf("resync: %v, %d records handed over, at most %d calls at once; want 4 records, 2 calls at once", err, len(got), most)
	}
	slices.Sort(got)
	if len(slices.Compact(got)) != len(got) {
		t.Errorf("a record handed over twice: %v", got)
	}
}

// TestResyncRefused: a record that does not decode (here, hand-edited with a field no
// version knows) is told to Refused and left, and the other clusters are queued; without
// Refused, it stops the resync as invalid input.
func TestResyncRefused(t *testing.T) {
	t.Parallel()
	p, sink := fleet(t)
	ctx := context.Background()
	record := path.Join(p.Config.Flux.Path, "magnum-9f3c1b2a4d5e4f6a8b7c6d5e4f3a2b1c/prod-a-2b7xq4mzkd5h", reconciler.RecordFile)
	handEdit(t, sink, record, "{", `{"flavour": "vanilla",`)
	upgraded := upgrade(p)
	for _, tc := range []struct {
		name    string
		refused bool
		queued  int
	}{
		{name: "told and left", refused: true, queued: 3},
		{name: "no Refused: the resync stops"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			o := reconciler.ResyncOptions{Batch: 1, Queue: func(_ context.Context, recs []*reconciler.ResyncRecord) error {
				for _, rec := range recs {
					got = append(got, rec.Path)
				}
				return nil
			}}
			var refused []string
			if tc.refused {
				o.Refused = func(f string, err error) {
					refused = append(refused, f)
					if !strings.Contains(err.Error(), "flavour") {
						t.Errorf("%s: %v; want the unknown field named", f, err)
					}
				}
			}
			err := upgraded.ResyncRecords(ctx, sink.Repo, o)
			if tc.refused {
				if err != nil || len(got) != tc.queued || slices.Contains(got, record) || !slices.Equal(refused, []string{record}) {
					t.Errorf("queued %v, refused %v, %v; want %d records, %s refused", got, refused, err, tc.queued, record)
				}
			} else if reconciler.KindOf(err) != reconciler.KindInvalid || !strings.Contains(err.Error(), "flavour") {
				t.Errorf("%v; want the record refused as invalid", err)
			}
		})
	}
}

// TestResyncRefusedInReconcile: a record that decodes but does not render (here, hand-edited
// with a CIDR no network has) is refused by its cluster's reconcile, as invalid input naming
// the field, and left as Git holds it; the clusters reconciled with it resync.
func TestResyncRefusedInReconcile(t *testing.T) {
	t.Parallel()
	p, sink := fleet(t)
	ctx := context.Background()
	dir := path.Join(p.Config.Flux.Path, "magnum-9f3c1b2a4d5e4f6a8b7c6d5e4f3a2b1c/prod-a-2b7xq4mzkd5h")
	handEdit(t, sink, path.Join(dir, reconciler.RecordFile), `"keypair": "ops-key",`, `"keypair": "ops-key", "labels": {"fixed_subnet_cidr": "300.1.1.1/99"},`)
	hr, _, err := sink.Repo.ReadFile(path.Join(dir, generator.HelmReleaseFile))
	if err != nil {
		t.Fatal(err)
	}
	upgraded := upgrade(p)
	// As serve runs it: the records, reconciled, the refusals told apart.
	r, stop := running(sink, upgraded, 4)
	defer stop()
	var refused []string
	committed := 0
	err = upgraded.ResyncRecords(ctx, sink.Repo, r.ResyncOptions(func(record string, err error) {
		refused = append(refused, record)
		if reconciler.KindOf(err) != reconciler.KindInvalid || !strings.Contains(err.Error(), "render") || !strings.Contains(err.Error(), "fixed_subnet_cidr") {
			t.Errorf("%s: %v; want refused as invalid by its render, naming the field", record, err)
		}
	}, func(rec *reconciler.ResyncRecord, sum reconciler.Summary) {
		if sum.Err() != nil || sum.NoOp {
			t.Errorf("%s: %+v %v; want its resync committed", rec.Path, sum, sum.Err())
		}
		committed++
	}))
	if want := []string{path.Join(dir, reconciler.RecordFile)}; err != nil || !slices.Equal(refused, want) || committed != 3 {
		t.Errorf("resync: %v, refused %v, %d committed; want %v refused and the 3 others committed", err, refused, committed, want)
	}
	if now, _, _ := sink.Repo.ReadFile(path.Join(dir, generator.HelmReleaseFile)); string(now) != string(hr) {
		t.Error("the refused cluster's HelmRelease changed")
	}
}

// upgrade is p as a newer magnum-gitops that renders every HelmRelease differently.
func upgrade(p *reconciler.Pipeline) *reconciler.Pipeline {
	cfg := *p.Config
	cfg.Flux.Timeout = generator.Duration{Duration: 7 * time.Minute}
	upgraded := *p
	upgraded.Config = &cfg
	return &upgraded
}

// countingSnapshot is a snapshot of the branch that notes the records resync reads.
type countingSnapshot struct {
	*gitrepo.Snapshot
	mu      sync.Mutex
	records map[string]bool
}

func (c *countingSnapshot) ReadFile(p string) ([]byte, bool, error) {
	if path.Base(p) == reconciler.RecordFile {
		c.mu.Lock()
		c.records[p] = true
		c.mu.Unlock()
	}
	return c.Snapshot.ReadFile(p)
}

// TestResyncSkipsSettledClusters: with a Gate, a cluster directory that rendered to
// nothing is not read again while its tree, the other paths its plan covers and the
// pipeline's settings stay the same; a change to any of them brings it back.
func TestResyncSkipsSettledClusters(t *testing.T) {
	t.Parallel()
	const ns = "magnum-9f3c1b2a4d5e4f6a8b7c6d5e4f3a2b1c" // prod-a's project, of no other cluster here
	for _, tc := range []struct {
		name string
		// change edits the repository (or returns another pipeline) after the first resync.
		change      func(t *testing.T, p *reconciler.Pipeline, sink *reconciler.GitSink) *reconciler.Pipeline
		reads, plan int // records read (of distinct clusters) and plans made by the second resync
	}{
		{name: "unchanged", reads: 0, plan: 0},
		{name: "a hand edit in a cluster's directory", reads: 1, plan: 1,
			change: func(t *testing.T, p *reconciler.Pipeline, sink *reconciler.GitSink) *reconciler.Pipeline {
				handEdit(t, sink, path.Join(p.Config.Flux.Path, ns, "prod-a-2b7xq4mzkd5h", generator.HelmReleaseFile), "machineCount: 3", "machineCount: 9")
				return p
			}},
		{name: "a hand edit of the namespace beside it", reads: 1, plan: 1,
			change: func(t *testing.T, p *reconciler.Pipeline, sink *reconciler.GitSink) *reconciler.Pipeline {
				handEdit(t, sink, path.Join(p.Config.Flux.Path, ns, "namespace.yaml"), "kind: Namespace", "kind: Namespace\n# edited")
				return p
			}},
		{name: "other settings, the same gate", reads: 4, plan: 4,
			change: func(t *testing.T, p *reconciler.Pipeline, _ *reconciler.GitSink) *reconciler.Pipeline {
				return upgrade(p)
			}},
		// A new process: its gate loads what the first one saved.
		{name: "a restart of the same build", reads: 0, plan: 0, change: restart("build-1")},
		{name: "a restart of another build", reads: 4, plan: 0, change: restart("build-2")},
		{name: "a restart of a build from modified sources", reads: 4, plan: 0, change: restart("")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, sink := fleet(t)
			p.Gate = &gate.Gate{Build: "build-1", File: filepath.Join(t.TempDir(), "settled")}
			ctx := context.Background()
			resync := func(p *reconciler.Pipeline) (reads, plans int) {
				t.Helper()
				snap, err := sink.Repo.Snapshot()
				if err != nil {
					t.Fatal(err)
				}
				c := &countingSnapshot{Snapshot: snap, records: map[string]bool{}}
				pl, err := resyncPlans(ctx, p, c)
				if err != nil {
					t.Fatal(err)
				}
				return len(c.records), len(pl)
			}
			if reads, plans := resync(p); reads != 4 || plans != 0 {
				t.Fatalf("first resync: %d records read, %d plans; want 4 and none", reads, plans)
			}
			q := p
			if tc.change != nil {
				q = tc.change(t, p, sink)
			}
			if reads, plans := resync(q); reads != tc.reads || plans != tc.plan {
				t.Errorf("second resync: %d records read, %d plans; want %d and %d", reads, plans, tc.reads, tc.plan)
			}
		})
	}
}

// restart is the pipeline of a new process of the given build: the old gate saved, a new
// one loaded.
func restart(build string) func(t *testing.T, p *reconciler.Pipeline, _ *reconciler.GitSink) *reconciler.Pipeline {
	return func(t *testing.T, p *reconciler.Pipeline, _ *reconciler.GitSink) *reconciler.Pipeline {
		t.Helper()
		if err := p.Gate.Save(); err != nil {
			t.Fatal(err)
		}
		q := *p
		q.Gate = &gate.Gate{Build: build, File: p.Gate.File}
		if err := q.Gate.Load(); err != nil {
			t.Fatal(err)
		}
		return &q
	}
}

// handEdit commits an operator's edit of one file: from replaced by to.
func handEdit(t *testing.T, sink *reconciler.GitSink, file, from, to string) {
	t.Helper()
	b, ok, err := sink.Repo.ReadFile(file)
	if err != nil || !ok {
		t.Fatalf("reading %s: %v %v", file, ok, err)
	}
	edited := strings.Replace(string(b), from, to, 1)
	if edited == string(b) {
		t.Fatalf("no %q in %s:\n%s", from, file, b)
	}
	if _, err := sink.Repo.Apply(context.Background(), gitrepo.Change{Subject: "hand edit", Files: map[string][]byte{file: []byte(edited)}}); err != nil {
		t.Fatal(err)
	}
}

// resync reconciles the resync of records through a Reconciler, as serve and the resync
// command do.
func resync(ctx context.Context, sink *reconciler.GitSink, p *reconciler.Pipeline, records []*reconciler.ResyncRecord) []reconciler.Summary {
	r, stop := running(sink, p, len(records))
	defer stop()
	return r.Resync(ctx, records)
}

// running runs a Reconciler of p committing to sink, maxGroup operations to a group, until
// stop.
func running(sink *reconciler.GitSink, p *reconciler.Pipeline, maxGroup int) (*reconciler.Reconciler, func()) {
	r := &reconciler.Reconciler{Pipeline: p, Sink: sink, MaxGroup: maxGroup}
	r.Start()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	return r, func() { cancel(); <-done }
}

// resyncOne reconciles the resync of one cluster.
func resyncOne(ctx context.Context, sink *reconciler.GitSink, p *reconciler.Pipeline, rec *reconciler.ResyncRecord) (reconciler.Summary, error) {
	sum := resync(ctx, sink, p, []*reconciler.ResyncRecord{rec})[0]
	err := sum.Err()
	return sum, err
}

// resyncAll commits the resync of every plan as one group: a commit of its own for each
// cluster that still moves once the ones before it in the group are committed.
func resyncAll(t *testing.T, sink *reconciler.GitSink, p *reconciler.Pipeline, plans []resyncPlan) {
	t.Helper()
	records := make([]*reconciler.ResyncRecord, len(plans))
	for i, pl := range plans {
		records[i] = pl.record
	}
	commits := map[string]string{}
	for i, sum := range resync(context.Background(), sink, p, records) {
		pl := plans[i]
		if sum.Err() != nil {
			t.Fatalf("%s: %v", pl.Result.ReleaseName, sum.Err())
		}
		if c := sum.Revision; c != "" {
			if other, ok := commits[c]; ok {
				t.Errorf("%s and %s share commit %s", other, pl.Result.ReleaseName, c)
			}
			commits[c] = pl.Result.ReleaseName
		}
	}
}
