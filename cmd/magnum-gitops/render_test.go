package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
)

func TestRenderValuesMatchGolden(t *testing.T) {
	t.Parallel()
	out, _, err := run(t, "", "render", "-f", fixture, "-o", "values")
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("../../fixtures/golden/01-prod-a-create/render.json")
	if err != nil {
		t.Fatal(err)
	}
	var golden struct{ Values map[string]any }
	if err := json.Unmarshal(b, &golden); err != nil {
		t.Fatal(err)
	}
	g1, _ := json.Marshal(got)
	g2, _ := json.Marshal(golden.Values)
	if string(g1) != string(g2) {
		t.Errorf("render -o values differs from the golden values:\n%s\n%s", g1, g2)
	}
}

func TestRenderFromStdinAsJSON(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../../fixtures/events/27-generated-release-name.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out, stderr, err := run(t, string(data), "render", "-f", "-", "-o", "json")
	_ = stderr
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		StackID   string   `json:"stack_id"`
		Generated bool     `json:"stack_id_generated"`
		Files     []string `json:"files"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if !rep.Generated || !strings.HasPrefix(rep.StackID, "a-very-long-cluster-name-that-") || len(rep.Files) != 5 || !strings.HasSuffix(rep.Files[2], "/magnum-cluster.yaml") {
		t.Errorf("report = %+v", rep)
	}
	if strings.Contains(out, "fixture-appcred-secret") || stderr != "" {
		t.Errorf("-o json must carry no Secret; stderr=%q", stderr)
	}
}

func TestRenderOutDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, _, err := run(t, "", "render", "-f", fixture, "--out-dir", dir, "--insecure-plaintext-secrets"); err != nil {
		t.Fatal(err)
	}
	cdir := filepath.Join(dir, "clusters/magnum/magnum-9f3c1b2a4d5e4f6a8b7c6d5e4f3a2b1c/prod-a-2b7xq4mzkd5h")
	for _, f := range []string{"helmrelease.yaml", "kustomization.yaml", "secret-ca.yaml", "secret-cloud-credentials.yaml"} {
		if _, err := os.Stat(filepath.Join(cdir, f)); err != nil {
			t.Error(err)
		}
	}
	if st, err := os.Stat(filepath.Join(cdir, "secret-ca.yaml")); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("secret file mode = %v, %v", st.Mode(), err)
	}
	// A later update without Secret material keeps listing the Secrets.
	if _, _, err := run(t, "", "render", "-f", "../../fixtures/events/02-prod-a-resize-workers.yaml", "--out-dir", dir); err != nil {
		t.Fatal(err)
	}
	k, _ := os.ReadFile(filepath.Join(cdir, "kustomization.yaml"))
	if !strings.Contains(string(k), "secret-ca.yaml") || !strings.Contains(string(k), "helmrelease.yaml") {
		t.Errorf("kustomization lost entries:\n%s", k)
	}
}

// TestRenderBadInputWritesNothing: an event with errors exits 2 (input error), names the
// fields, and leaves the output directory exactly as it was.
func TestRenderBadInputWritesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "keep"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(fixture)
	bad := strings.Replace(string(data), "kube_version: v1.33.7", "kube_version: ''", 1)
	bad = strings.Replace(bad, "name: default-worker", "name: w", 1)
	_, _, err := run(t, bad, "render", "-f", "-", "--out-dir", dir, "--insecure-plaintext-secrets")
	if !errors.Is(err, v1alpha1.ErrInvalidInput) {
		t.Fatalf("err = %v, want an input error", err)
	}
	for _, want := range []string{"resolved.image.kube_version", "nodegroups[w].name"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not name %s: %v", want, err)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("output directory changed: %v", entries)
	}
}

func TestRenderFlags(t *testing.T) {
	t.Parallel()
	if _, _, err := run(t, "", "render", "-f", fixture, "-o", "toml"); err == nil || !strings.Contains(err.Error(), "--output") {
		t.Errorf("bad -o: %v", err)
	}
	if _, _, err := run(t, "", "render"); err == nil || !strings.Contains(err.Error(), "filename") {
		t.Errorf("missing -f: %v", err)
	}
	out, _, err := run(t, "", "render", "--help")
	if err != nil || !strings.Contains(out, "--insecure-plaintext-secrets") || !strings.Contains(out, "values  only the chart values") {
		t.Errorf("help: %v\n%s", err, out)
	}
}
