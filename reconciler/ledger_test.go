package reconciler_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/gitrepo"
	"github.com/magnum-gitops/magnum-gitops/reconciler"
	"github.com/magnum-gitops/magnum-gitops/reconciler/openstack"
)

// TestLoadLedgerAnswersARetryOfACompletedEvent: a service commits an event that its
// resolvers completed (the CA bundle of the application credential, read from the
// system's bundle), then dies before it answers. The retry, the same bytes under the same
// id, reaches a restarted service, whose ledger is read from the commit trailers: it must
// be recognised as the event that commit carried, not refused as an id reused for another
// event (found by make e2e-magnum, test_faults.py, with serve killed after its push).
func TestLoadLedgerAnswersARetryOfACompletedEvent(t *testing.T) {
	t.Parallel()
	bundle := filepath.Join(t.TempDir(), "ca-certificates.crt")
	if err := os.WriteFile(bundle, []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p, sink, _ := committer(t)
	p.Resolvers = []reconciler.Resolver{openstack.CABundle{System: []string{bundle}}}
	ctx := context.Background()
	// As the driver shim sends it when Magnum has no [drivers] openstack_ca_file.
	withoutBundle := func() *v1alpha1.ClusterEvent {
		ev := event(t, "01-prod-a-create.yaml")
		if ev.Secrets == nil || ev.Secrets.ApplicationCredential == nil {
			t.Fatal("the fixture must carry an application credential")
		}
		ev.Secrets.CABundle = ""
		return ev
	}
	sent := withoutBundle()
	out, err := sink.Apply(ctx, p, sent)
	if err != nil || out.NoOp() {
		t.Fatalf("create: %+v %v", out, err)
	}
	if sent.Secrets.CABundle == "" {
		t.Fatal("the resolver did not complete the event: the test shows nothing")
	}
	ledger, err := reconciler.LoadLedger(ctx, sink.Repo)
	if err != nil {
		t.Fatal(err)
	}
	retry := withoutBundle()
	sum, ok, err := ledger.Lookup(retry.ID, reconciler.Digest(retry))
	if err != nil || !ok || sum.Revision != out.Commit {
		t.Fatalf("the retry after a restart: %+v known %v, %v; want the answer of commit %s", sum, ok, err, out.Commit)
	}
}

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
