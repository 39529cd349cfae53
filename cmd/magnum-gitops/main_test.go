package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/internal/config"
	"github.com/magnum-gitops/magnum-gitops/internal/leakcheck"
	"github.com/magnum-gitops/magnum-gitops/internal/sopsenc"
)

// run executes the CLI in-process. Its output and error are scanned for secret values.
// fileWriter returns a function that writes a file into a new temporary directory and
// returns its path: the configuration and key files a test hands the CLI.
func fileWriter(t *testing.T) func(name, content string) string {
	t.Helper()
	dir := t.TempDir()
	return func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
}

func run(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	cmd := newRootCommand()
	var out, errOut bytes.Buffer
	cmd.SetArgs(args)
	cmd.SetIn(strings.NewReader(stdin))
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	err := cmd.Execute()
	what := "magnum-gitops " + strings.Join(args, " ")
	leakcheck.Check(t, what+" (stdout)", out.Bytes())
	leakcheck.Check(t, what+" (stderr)", errOut.Bytes())
	if err != nil {
		leakcheck.Check(t, what+" (error)", []byte(err.Error()))
	}
	return out.String(), errOut.String(), err
}

const fixture = "../../fixtures/events/01-prod-a-create.yaml"

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

// TestDeployedConfig: the service's ConfigMap in deploy/ holds a configuration that loads
// and whose SOPS recipients the encrypter takes.
func TestDeployedConfig(t *testing.T) {
	t.Parallel()
	cm, err := os.ReadFile("../../deploy/service/config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Data map[string]string `json:"data"`
	}
	if err := yaml.Unmarshal(cm, &doc); err != nil {
		t.Fatal(err)
	}
	deployed := filepath.Join(t.TempDir(), "deployed.yaml")
	os.WriteFile(deployed, []byte(doc.Data["config.yaml"]), 0o644)
	if c, err := config.Load(deployed); err != nil || c.Serve.Listen != "0.0.0.0:8080" {
		t.Errorf("deploy/service/config.yaml: %v", err)
	} else if c.Flux.Layout != generator.LayoutPerNamespace || c.Flux.Git.URL != c.Git.URL {
		t.Errorf("deploy/service/config.yaml: layout %q fetching %q, want per-namespace fetching git.url", c.Flux.Layout, c.Flux.Git.URL)
	} else if _, err := sopsenc.New(sopsenc.Options{AgeRecipients: c.Sops.AgeRecipients, DigestKey: make([]byte, 32)}); err != nil {
		t.Errorf("deploy/service/config.yaml sops.age_recipients: %v", err)
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

func TestDemo(t *testing.T) {
	t.Parallel()
	repo := filepath.Join(t.TempDir(), "clusters.git")
	out, _, err := run(t, "", "demo", "--repo", repo)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"28-site-label-defaults-via-template.yaml", "SOPS-encrypted", "Magnum-Operation: resize_cluster",
		"node group default-worker: 3 × m1.medium → 5 × m1.medium", "└── sources", "helmrepository-azimuth-cloud-github-io-capi-helm-charts.yaml"} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
	gitCLI := func(args ...string) string {
		b, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, b)
		}
		return string(b)
	}
	gitCLI("fsck", "--strict")
	if n := strings.Count(gitCLI("log", "--format=%H", "main"), "\n"); n != 27 {
		t.Errorf("%d commits, want one per event (27)", n)
	}
	files := gitCLI("ls-tree", "-r", "--name-only", "main")
	// prod-a was deleted last: its HelmRelease is gone, its Secrets stay.
	if strings.Contains(files, "prod-a-2b7xq4mzkd5h/helmrelease.yaml") {
		t.Error("the deleted cluster still has a HelmRelease")
	}
	if !strings.Contains(files, "prod-a-2b7xq4mzkd5h/secret-cloud-credentials.sops.yaml") || !strings.Contains(files, ".sops.yaml\n") {
		t.Errorf("Secrets must outlive the deleted cluster's HelmRelease:\n%s", files)
	}
}
