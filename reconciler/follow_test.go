package reconciler_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/magnum-gitops/magnum-gitops/reconciler"
)

// following returns the Reconciler of a replica whose repository is sink's, indexing into
// clusters, with its history read (ReadHistory): its CatchUp reads what was committed after.
func following(t *testing.T, p *reconciler.Pipeline, sink *reconciler.GitSink, clusters *reconciler.Clusters) *reconciler.Reconciler {
	t.Helper()
	r := &reconciler.Reconciler{Pipeline: p, Sink: sink, Clusters: clusters}
	if _, err := r.ReadHistory(context.Background()); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestFollowerCatchesUp: a replica learns the events another replica committed — the
// clusters with their revisions, the event ids for retries and reuse — and forgets a
// cluster whose directory the other one removed; with nothing new it reads nothing.
func TestFollowerCatchesUp(t *testing.T) {
	t.Parallel()
	p, a, dir := committer(t)
	b := replica(t, dir)
	ctx := context.Background()
	clusters, _, err := reconciler.LoadClusters(b.Repo, p.Config, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	f := following(t, p, b, clusters)

	create, resize := event(t, "01-prod-a-create.yaml"), event(t, "02-prod-a-resize-workers.yaml")
	if _, err := a.Apply(ctx, p, create); err != nil {
		t.Fatal(err)
	}
	out, err := a.Apply(ctx, p, resize)
	if err != nil || out.NoOp() {
		t.Fatalf("resize: %+v %v", out, err)
	}
	if n, err := f.CatchUp(ctx); n != 0 || err != nil {
		t.Errorf("before a fetch: %d commits read, %v", n, err)
	}
	if err := b.Repo.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := f.CatchUp(ctx); n != 2 || err != nil {
		t.Errorf("after the other replica's two events: %d commits read, %v", n, err)
	}
	uuid := resize.Cluster.UUID
	rec, ok := clusters.Get(uuid)
	if !ok || rec.Event.ID != resize.ID || rec.Revision != out.Commit || rec.StackID != out.Plan.Result.ReleaseName || rec.Namespace != out.Plan.Result.Namespace {
		t.Errorf("the cluster as the follower read it: %+v (ok %v); want event %s at %s", rec, ok, resize.ID, out.Commit)
	}
	if sum, ok, err := f.Lookup(resize.ID, reconciler.Digest(resize)); !ok || err != nil || sum.Revision != out.Commit {
		t.Errorf("a retry of the other replica's event: %+v %v %v", sum, ok, err)
	}
	if _, _, err := f.Lookup(create.ID, "sha256:other"); !errors.Is(err, reconciler.ErrIdempotencyConflict) {
		t.Errorf("the other replica's id with another body: %v", err)
	}
	if n, err := f.CatchUp(ctx); n != 0 || err != nil {
		t.Errorf("nothing new: %d commits read, %v", n, err)
	}

	// The reconciler indexes an event it committed after the head the follower reads: the
	// follower leaves the newer record alone.
	newer := *resize
	newer.ID = "evt-newer"
	later := strings.Repeat("ab", 20) // a commit this clone has not fetched
	clusters.Observe(&newer, reconciler.Summary{StackID: rec.StackID, Namespace: rec.Namespace, Revision: later}, time.Now())
	if _, err := a.Apply(ctx, p, event(t, "06-prod-a-upgrade.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := b.Repo.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := f.CatchUp(ctx); n != 1 || err != nil {
		t.Errorf("after the upgrade: %d commits read, %v", n, err)
	}
	if got, _ := clusters.Get(uuid); got.Event.ID != "evt-newer" {
		t.Errorf("the follower replaced the reconciler's newer record with %s", got.Event.ID)
	}
	clusters.Observe(resize, reconciler.Summary{StackID: rec.StackID, Namespace: rec.Namespace, Revision: out.Commit}, time.Now())

	// The other replica finishes the cluster's delete: the directory leaves Git.
	del := event(t, "08-prod-a-delete.yaml")
	if _, err := a.Apply(ctx, p, del); err != nil {
		t.Fatal(err)
	}
	arec := reconciler.ClusterRecord{Event: del, StackID: rec.StackID, Namespace: rec.Namespace, Root: rec.Root}
	deleteAll(t, p, a, arec)
	if err := b.Repo.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := f.CatchUp(ctx); n != 3 || err != nil {
		t.Errorf("after the delete: %d commits read, %v", n, err)
	}
	if _, ok := clusters.Get(uuid); ok {
		t.Error("the deleted cluster is still indexed")
	}
	if _, ok := clusters.Gone(uuid); !ok {
		t.Error("the deleted cluster left no tombstone")
	}
	if log := gitOut(t, dir, "log", "--format=%s", "main"); !strings.Contains(log, "is gone") {
		t.Errorf("history:\n%s", log)
	}
}

// TestCatchUpNeedsHistory: a reconciler that never read its history has no head to read
// on from, and says so rather than reading nothing.
func TestCatchUpNeedsHistory(t *testing.T) {
	t.Parallel()
	if n, err := (&reconciler.Reconciler{}).CatchUp(context.Background()); n != 0 || err == nil {
		t.Errorf("CatchUp before ReadHistory: %d commits read, %v; want an error", n, err)
	}
}

// TestFollowerKeepsRevisions: an event without an id keeps the commit that carried it, on
// the replica that committed it (whose record the follower then finds indexed already)
// and on another one (which takes the newest commit of that event).
func TestFollowerKeepsRevisions(t *testing.T) {
	t.Parallel()
	p, a, dir := created(t)
	ctx := context.Background()
	own := reconciler.NewClusters()
	fa := following(t, p, a, own)
	b := replica(t, dir)
	others := reconciler.NewClusters()
	fb := following(t, p, b, others)

	resize := event(t, "02-prod-a-resize-workers.yaml")
	resize.ID = ""
	out, err := a.Apply(ctx, p, resize)
	if err != nil || out.NoOp() {
		t.Fatalf("resize: %+v %v", out, err)
	}
	at := time.Now().Add(-time.Hour)
	own.Observe(resize, reconciler.Summary{StackID: out.Plan.Result.ReleaseName, Namespace: out.Plan.Result.Namespace, Revision: out.Commit}, at)
	if _, err := fa.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if rec, _ := own.Get(resize.Cluster.UUID); rec.Revision != out.Commit || !rec.At.Equal(at) {
		t.Errorf("the replica that committed it: revision %q at %s, want %q at %s", rec.Revision, rec.At, out.Commit, at)
	}
	if err := b.Repo.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := fb.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if rec, ok := others.Get(resize.Cluster.UUID); !ok || rec.Revision != out.Commit {
		t.Errorf("the other replica: revision %q (known %v), want %q", rec.Revision, ok, out.Commit)
	}
}

// TestFollowerTombstones: a snapshot read before a cluster's delete completed does not
// bring the forgotten cluster back; a record written after the completion is read as any
// other.
func TestFollowerTombstones(t *testing.T) {
	t.Parallel()
	p, a, dir := committer(t)
	b := replica(t, dir)
	ctx := context.Background()
	clusters := reconciler.NewClusters()
	f := following(t, p, b, clusters)

	create, del := event(t, "01-prod-a-create.yaml"), event(t, "08-prod-a-delete.yaml")
	uuid := create.Cluster.UUID
	if _, err := a.Apply(ctx, p, create); err != nil {
		t.Fatal(err)
	}
	out, err := a.Apply(ctx, p, del)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Repo.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	rec := reconciler.ClusterRecord{Event: del, StackID: out.Plan.Result.ReleaseName, Namespace: out.Plan.Result.Namespace, Root: out.Plan.Result.Root}
	done := deleteAll(t, p, a, rec)
	// This replica saw the delete complete (its leader finished it) in a commit the
	// follower's next snapshot, fetched before, does not hold.
	clusters.Observe(del, reconciler.Summary{StackID: rec.StackID, Namespace: rec.Namespace, Revision: out.Commit}, time.Now())
	clusters.Forget(uuid, time.Now(), done)
	if n, err := f.CatchUp(ctx); n != 2 || err != nil {
		t.Fatalf("the create and the delete: %d commits read, %v", n, err)
	}
	if got, ok := clusters.Get(uuid); ok {
		t.Fatalf("a snapshot older than the delete's completion brought the cluster back: %s", got.Event.ID)
	}

	// The completion is fetched and read; then the other replica commits the cluster anew
	// (Magnum does not reuse a UUID, but Git may be written by hand): read as any record.
	if err := b.Repo.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := f.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	again := *create
	again.ID = "evt-create-again"
	if out, err := a.Apply(ctx, p, &again); err != nil || out.NoOp() {
		t.Fatalf("the create again: %+v %v", out, err)
	}
	if err := b.Repo.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := f.CatchUp(ctx); n != 1 || err != nil {
		t.Fatalf("the create again: %d commits read, %v", n, err)
	}
	if got, ok := clusters.Get(uuid); !ok || got.Event.ID != again.ID {
		t.Fatalf("the record committed after the completion is not indexed: %+v %v", got, ok)
	}
}
