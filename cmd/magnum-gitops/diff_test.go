package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
)

// TestDiff: a directory that holds the event diffs clean (exit 0); the next event shows
// its changes (exit 1) with no Secret value; bad input exits 2 and writes nothing.
func TestDiff(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, _, err := run(t, "", "render", "-f", fixture, "--out-dir", dir, "--insecure-plaintext-secrets"); err != nil {
		t.Fatal(err)
	}
	out, _, err := run(t, "", "diff", "-f", fixture, "--dir", dir, "--insecure-plaintext-secrets")
	if err != nil || out != "" {
		t.Fatalf("diff of what the directory holds: %v\n%s", err, out)
	}
	out, _, err = run(t, "", "diff", "-f", "../../fixtures/events/02-prod-a-resize-workers.yaml", "--dir", dir)
	if !errors.Is(err, errDifferences) || exitCode(&bytes.Buffer{}, err) != 1 {
		t.Fatalf("err = %v, want differences (exit 1)", err)
	}
	for _, want := range []string{"--- a/clusters/magnum/", "+++ b/clusters/magnum/", "-    - machineCount: 3", "+    - machineCount: 5"} {
		if !strings.Contains(out, want) {
			t.Errorf("diff lacks %q:\n%s", want, out)
		}
	}
	// A changed plaintext Secret shows its keys, never its values.
	data, _ := readInput(nil, fixture)
	changed := strings.Replace(string(data), "secret: ", "secret: x", 1)
	out, _, err = run(t, changed, "diff", "-f", "-", "--dir", dir, "--insecure-plaintext-secrets")
	if !errors.Is(err, errDifferences) || !strings.Contains(out, "secret-cloud-credentials.yaml") || !strings.Contains(out, "values of stringData.clouds.yaml changed (not shown)") {
		t.Fatalf("err = %v, want a masked Secret diff:\n%s", err, out)
	}
	ev, _ := v1alpha1.DecodeEvent([]byte(changed))
	for _, secret := range []string{ev.Secrets.ApplicationCredential.Secret.Reveal(), strings.Split(ev.Secrets.Certificates.CA.Key.Reveal(), "\n")[1]} {
		if strings.Contains(out, secret) {
			t.Errorf("a secret value is in the diff (%.8s…)", secret)
		}
	}
	// A site post-renderer added to the configuration shows in the HelmRelease of each cluster.
	cfg := fileWriter(t)("post-renderers.yaml", "flux: {post_renderers: [{kustomize: {patches: [{target: {group: cluster.x-k8s.io, kind: Cluster}, patch: '[{op: replace, path: /spec/paused, value: true}]'}]}}]}\n")
	out, _, err = run(t, "", "diff", "-f", fixture, "--dir", dir, "--insecure-plaintext-secrets", "--config", cfg)
	if !errors.Is(err, errDifferences) || !strings.Contains(out, "+  postRenderers:") || !strings.Contains(out, "/spec/paused") {
		t.Fatalf("err = %v, want the HelmRelease's new post-renderer in the diff:\n%s", err, out)
	}
	_, _, err = run(t, "apiVersion: magnum-gitops.io/v1alpha1\nkind: ClusterEvent\noperation: explode\n", "diff", "-f", "-", "--dir", dir)
	if exitCode(&bytes.Buffer{}, err) != 2 || !strings.Contains(err.Error(), "operation") {
		t.Errorf("bad input: %v, want exit 2 naming the field", err)
	}
}
