package reconciler_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/reconciler"
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
	p.Resolvers = []reconciler.Resolver{reconciler.CABundle{System: []string{bundle}}}
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
