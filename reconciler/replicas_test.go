package reconciler_test

import (
	"context"
	"errors"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/gitrepo"
	"github.com/magnum-gitops/magnum-gitops/reconciler"
)

// replica opens a second clone of the repository behind sink: another serve process.
func replica(t *testing.T, dir string) *reconciler.GitSink {
	t.Helper()
	repo, err := gitrepo.Open(context.Background(), gitrepo.Options{URL: "file://" + dir,
		Author: gitrepo.Signature{Name: "magnum-gitops", Email: "m@example.org"}})
	if err != nil {
		t.Fatal(err)
	}
	return &reconciler.GitSink{Repo: repo}
}

// TestReusedIDAcrossReplicas: a replica whose ledger has not seen an event id yet still
// refuses that id with another body, because the record on the branch carries it; the same
// body is a retry and commits nothing.
func TestReusedIDAcrossReplicas(t *testing.T) {
	t.Parallel()
	p, a, dir := committer(t)
	b := replica(t, dir) // cloned before a's commit: stale
	ctx := context.Background()
	create, resize := event(t, "01-prod-a-create.yaml"), event(t, "02-prod-a-resize-workers.yaml")
	if out, err := a.Apply(ctx, p, create); err != nil || out.NoOp() {
		t.Fatalf("create: %+v %v", out, err)
	}
	if out, err := a.Apply(ctx, p, resize); err != nil || out.NoOp() {
		t.Fatalf("resize: %+v %v", out, err)
	}
	head := gitOut(t, dir, "rev-parse", "main")

	n := *resize.Cluster.NodeCount + 1
	reused := *resize
	reused.Cluster.NodeCount = &n // another body under the same id
	out, err := b.Apply(ctx, p, &reused)
	var re *reconciler.Error
	if !errors.Is(err, reconciler.ErrIdempotencyConflict) || !errors.As(err, &re) || re.Kind != reconciler.KindConflict {
		t.Errorf("the same id with another body on the other replica: %+v %v; want an idempotency conflict", out, err)
	}
	retry := *resize
	if out, err := b.Apply(ctx, p, &retry); err != nil || !out.NoOp() {
		t.Errorf("the same event again on the other replica: %+v %v; want no change", out, err)
	}
	if now := gitOut(t, dir, "rev-parse", "main"); now != head {
		t.Errorf("the remote moved from %s to %s", head, now)
	}
	// An id that only looks like the record's, and an id the record does not hold, pass.
	next := *resize
	next.ID, next.Cluster.NodeCount = resize.ID+"-2", &n
	if out, err := b.Apply(ctx, p, &next); err != nil || out.NoOp() {
		t.Errorf("a new event: %+v %v", out, err)
	}
}

// TestResyncYieldsToNewerEvents: a resync planned before an event was committed commits
// nothing for that cluster, rather than the older record it rendered.
func TestResyncYieldsToNewerEvents(t *testing.T) {
	t.Parallel()
	p, sink, dir := created(t)
	ctx := context.Background()
	upgraded := upgrade(p)
	plans, err := upgraded.ResyncPlans(ctx, sink.Repo, nil)
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
	out, err := sink.Resync(ctx, upgraded, plans[0])
	if err != nil || !out.NoOp() {
		t.Errorf("resync after a newer event: %+v %v; want no commit", out, err)
	}
	if now := gitOut(t, dir, "rev-parse", "main"); now != head {
		t.Errorf("resync committed over the newer event:\n%s", gitOut(t, dir, "log", "-2", "--stat", "main"))
	}
	record := path.Join(generator.ClusterDir(p.Config, plans[0].Result.Namespace, plans[0].Result.ReleaseName), reconciler.RecordFile)
	if got := gitOut(t, dir, "show", "main:"+record); !strings.Contains(got, `"id": "`+resize.ID+`"`) {
		t.Errorf("the record lost the newer event:\n%s", got)
	}
	// The next resync renders the newer record.
	plans, err = upgraded.ResyncPlans(ctx, sink.Repo, nil)
	if err != nil || len(plans) != 1 {
		t.Fatalf("after the event: %d plans, %v", len(plans), err)
	}
	if out, err := sink.Resync(ctx, upgraded, plans[0]); err != nil || out.NoOp() {
		t.Errorf("resync of the newer record: %+v %v", out, err)
	}
}

// tornLister reads the live branch, as a FileLister without snapshots does, and lets an
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
	plans, err := upgraded.ResyncPlans(ctx, torn, nil)
	if err != nil || len(plans) != 1 {
		t.Fatalf("%d plans, %v", len(plans), err)
	}
	if out, err := sink.Resync(ctx, upgraded, plans[0]); err != nil || !out.NoOp() {
		t.Errorf("resync over a record that moved: %+v %v; want no commit", out, err)
	}
	record := path.Join(generator.ClusterDir(p.Config, plans[0].Result.Namespace, plans[0].Result.ReleaseName), reconciler.RecordFile)
	if got := gitOut(t, dir, "show", "main:"+record); !strings.Contains(got, `"id": "`+resize.ID+`"`) {
		t.Errorf("resync undid the event; history:\n%s", gitOut(t, dir, "log", "-3", "--format=%h %s", "main"))
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

// created is committer with prod-a created in the repository.
func created(t *testing.T) (*reconciler.Pipeline, *reconciler.GitSink, string) {
	t.Helper()
	p, sink, dir := committer(t)
	if _, err := sink.Apply(context.Background(), p, event(t, "01-prod-a-create.yaml")); err != nil {
		t.Fatal(err)
	}
	return p, sink, dir
}
