package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/internal/gitserver"
	"github.com/magnum-gitops/magnum-gitops/internal/leakcheck"
)

// TestApplyCommitsToConfiguredRepository runs apply twice against a file:// remote: one
// commit, then a no-op.
func TestApplyCommitsToConfiguredRepository(t *testing.T) {
	cfg, remote := committingConfig(t)

	out, _, err := run(t, "", "apply", "-f", fixture, "--config", cfg)
	if err != nil {
		t.Fatal(err)
	}
	var rep map[string]any
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep["revision"] == "" || rep["no_op"] != false || rep["branch"] != "main" {
		t.Errorf("report = %v", rep)
	}
	log, _ := exec.Command("git", "-C", remote, "log", "--format=%an|%s", "main").CombinedOutput()
	if !strings.HasPrefix(string(log), "Cloud Ops|magnum: create cluster prod-a (prod-a-2b7xq4mzkd5h)") {
		t.Errorf("log = %s", log)
	}
	out, _, err = run(t, "", "apply", "-f", fixture, "--config", cfg)
	if err != nil || !strings.Contains(out, `"no_op": true`) {
		t.Errorf("second apply: %v\n%s", err, out)
	}
	// Without git.url there is nowhere to commit.
	bare, _ := sopsConfigFile(t)
	if _, _, err := run(t, "", "apply", "-f", fixture, "--config", bare); err == nil || !strings.Contains(err.Error(), "git.url") {
		t.Errorf("missing git.url: %v", err)
	}
}

// TestResyncCommand: resync --dry-run prints what a new rendering would change and commits
// nothing; resync then commits it; a second resync finds nothing.
func TestResyncCommand(t *testing.T) {
	cfg, remote := committingConfig(t)
	base, _ := os.ReadFile(cfg)
	if _, _, err := run(t, "", "apply", "-f", fixture, "--config", cfg); err != nil {
		t.Fatal(err)
	}
	head := func() string {
		out, _ := exec.Command("git", "-C", remote, "rev-parse", "main").CombinedOutput()
		return strings.TrimSpace(string(out))
	}
	before := head()
	out, stderr, err := run(t, "", "resync", "--config", cfg, "--dry-run")
	if err != nil || out != "" || !strings.Contains(stderr, "0 clusters would change") {
		t.Fatalf("unchanged: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr)
	}
	// The same repository seen by a magnum-gitops whose rendering differs.
	os.WriteFile(cfg, append(base, "flux:\n  timeout: 7m\n"...), 0o600)
	out, stderr, err = run(t, "", "resync", "--config", cfg, "--dry-run")
	if err != nil || !strings.Contains(out, "# magnum-gitops: resync cluster prod-a") || !strings.Contains(out, "+  timeout: 7m0s") ||
		!strings.Contains(stderr, "1 clusters would change") {
		t.Fatalf("dry run: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr)
	}
	if head() != before {
		t.Fatal("--dry-run committed")
	}
	if _, stderr, err = run(t, "", "resync", "--config", cfg); err != nil || !strings.Contains(stderr, "1 clusters changed") {
		t.Fatalf("resync: %v\n%s", err, stderr)
	}
	if head() == before {
		t.Fatal("resync committed nothing")
	}
	if _, stderr, err = run(t, "", "resync", "--config", cfg); err != nil || !strings.Contains(stderr, "0 clusters changed") {
		t.Errorf("second resync: %v\n%s", err, stderr)
	}

	// One cluster, or one project: by name, UUID or stack id; a selection that matches no
	// cluster is an error naming it, and commits nothing.
	os.WriteFile(cfg, append(base, "flux:\n  timeout: 8m\n"...), 0o600)
	for _, sel := range [][]string{{"--cluster", "prod-a"}, {"--cluster", "3E9B7C52-1D4A-4F8E-9B6C-2A7D5E8F1C03"},
		{"--cluster", "prod-a-2b7xq4mzkd5h"}, {"--project", "9f3c1b2a4d5e4f6a8b7c6d5e4f3a2b1c"}} {
		out, stderr, err = run(t, "", append([]string{"resync", "--config", cfg, "--dry-run"}, sel...)...)
		if err != nil || !strings.Contains(out, "+  timeout: 8m0s") || !strings.Contains(stderr, "1 clusters would change") {
			t.Errorf("resync %v --dry-run: %v\nstdout:\n%s\nstderr:\n%s", sel, err, out, stderr)
		}
	}
	before = head()
	for _, sel := range [][]string{{"--cluster", "prod-b"}, {"--project", "0000"}, {"--cluster", "prod-a", "--project", "0000"}} {
		_, _, err = run(t, "", append([]string{"resync", "--config", cfg}, sel...)...)
		if err == nil || !strings.Contains(err.Error(), "no cluster in the repository matches "+strings.Join(sel, " ")) || head() != before {
			t.Errorf("resync %v: %v, want an error naming the selection and no commit", sel, err)
		}
	}
	if _, stderr, err = run(t, "", "resync", "--config", cfg, "--cluster", "prod-a"); err != nil || !strings.Contains(stderr, "1 clusters changed") {
		t.Errorf("resync --cluster prod-a: %v\n%s", err, stderr)
	}

	// A record hand-edited into one no version reads: named, left as it is, exit status 2.
	work := t.TempDir()
	gitIn := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("git", append([]string{"-C", work}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	gitIn("clone", "-q", remote, ".")
	record := "clusters/magnum/magnum-9f3c1b2a4d5e4f6a8b7c6d5e4f3a2b1c/prod-a-2b7xq4mzkd5h/magnum-cluster.yaml"
	b, err := os.ReadFile(filepath.Join(work, record))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(work, record), append([]byte(`{"flavour": "vanilla",`), b[1:]...), 0o644)
	gitIn("-c", "user.name=Op", "-c", "user.email=op@example.org", "commit", "-qam", "hand edit")
	gitIn("push", "-q", "origin", "main")
	before = head()
	os.WriteFile(cfg, append(base, "flux:\n  timeout: 9m\n"...), 0o600)
	_, stderr, err = run(t, "", "resync", "--config", cfg)
	if code := exitCode(io.Discard, err); code != 2 || !strings.Contains(stderr, record+": ") || !strings.Contains(stderr, "flavour") || head() != before {
		t.Errorf("a record that does not render: exit %d, %v\n%s", code, err, stderr)
	}
}

// committingConfig is a configuration that commits: sopsConfigFile's, with a git section
// for a new bare repository (author Cloud Ops). It returns the file and the repository.
func committingConfig(t *testing.T) (cfg, remote string) {
	t.Helper()
	cfg, _ = sopsConfigFile(t)
	remote = filepath.Join(t.TempDir(), "clusters.git")
	if out, err := exec.Command("git", "init", "-q", "--bare", "-b", "main", remote).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	t.Cleanup(func() { leakcheck.Repo(t, remote) })
	doc, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	doc = append(doc, "git:\n  url: file://"+remote+"\n  author: {name: Cloud Ops, email: ops@example.org}\n"...)
	if err := os.WriteFile(cfg, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg, remote
}

// TestApplyRefusesHostileInput: input an attacker or a careless operator would give is refused with
// exit status 2 and the field named, nothing reaches the repository, the repository stays
// fsck-clean, and no secret is quoted back.
func TestApplyRefusesHostileInput(t *testing.T) {
	t.Parallel()
	git := gitserver.Start(t)
	url := git.Init("clusters.git")
	write := fileWriter(t)
	empty := write("empty-token", "\n")
	badConf := write("magnum.conf", "[capi_helm]\ndefault_helm_chart_version = 0.27.0\n[keystone_authtoken]\npassword hunter2-SECRET\n")
	event, err := os.ReadFile("../../fixtures/events/02-prod-a-resize-workers.yaml")
	if err != nil {
		t.Fatal(err)
	}
	create, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	base := "git:\n  url: " + url + "\n  author: {name: magnum-gitops, email: m@example.org}\n"
	for _, tc := range []struct {
		name, config, event, field string
	}{
		{"newline in the event id", base, strings.Replace(string(event), "id: evt-02-resize-cluster", `id: "evt\nMagnum-Operation: delete_cluster"`, 1), "id"},
		{"NUL in the cluster name", base, strings.Replace(string(event), "name: prod-a\n", "name: \"prod\\0a\"\n", 1), "cluster.name"},
		{"newline in the node group target", base, strings.Replace(string(event), "nodegroup: default-worker", `nodegroup: "default-worker\nx"`, 1), "nodegroup"},
		{"duplicate operation", base, string(event) + "operation: delete_cluster\n", "operation: set twice"},
		{"second document", base, string(event) + "---\n" + string(event), "(document 2)"},
		{"typo under secrets", base, strings.Replace(string(create), "  certificates:", "  certficates:", 1), "secrets"},
		{"deep document", base, "apiVersion: " + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + "\n", "(document)"},
		{"header injection in the author email", strings.Replace(base, "email: m@example.org", `email: "m@example.org>\ncommitter x <y"`, 1), string(event), "git.author.email"},
		{"password in git.url", strings.Replace(base, "http://", "http://ops:hunter2-SECRET@", 1), string(event), "git.url"},
		{"token as the user of git.url", strings.Replace(base, "http://", "http://hunter2-SECRET@", 1), string(event), "git.url"},
		{"token in the query of git.url", strings.Replace(base, "url: "+url, "url: "+url+"?access_token=hunter2-SECRET", 1), string(event), "git.url"},
		{"credentials in the chart repository", base + "magnum: {capi_helm: {helm_chart_repo: \"https://robot:hunter2-SECRET@charts.example.org/\"}}\n", string(event), "magnum.capi_helm.helm_chart_repo"},
		{"a chart repository that is not a URL", base + "magnum: {capi_helm: {helm_chart_repo: \"hunter2-SECRET\"}}\n", string(event), "magnum.capi_helm.helm_chart_repo"},
		{"an oci chart with credentials", base + "magnum: {capi_helm: {helm_chart_name: \"oci://robot:hunter2-SECRET@registry.example.org/charts/openstack-cluster\"}}\n", string(event), "magnum.capi_helm.helm_chart_name"},
		{"a password line without '=' in magnum.conf", base + "magnum_conf: " + badConf + "\n", string(event), "line 4"},
		{"empty token file", base + "  auth: {token_file: " + empty + "}\n", string(event), "git.auth.token_file"},
		{"duplicate key in the config", base + "git:\n  url: x\n", string(event), "git: set twice"},
		{"unknown config key", base + "serve: {listn: x}\n", string(event), "serve.listn"},
		{"unknown nested config key", base + "serve: {tls: {certfile: x}}\n", string(event), "serve.tls.certfile"},
		{"a config value of the wrong type", base + "serve: {max_body_bytes: hunter2-SECRET}\n", string(event), "serve.max_body_bytes"},
		{"flux.path is .git", base + "flux: {path: clusters/.GIT}\n", string(event), "flux.path"},
		{"flux.path is .git on NTFS", base + "flux: {path: \"git~1/x\"}\n", string(event), "flux.path"},
		{"flux.path with an ignorable character", base + "flux: {path: \".g\\u200cit/x\"}\n", string(event), "flux.path"},
		{"flux.path is .gitmodules", base + "flux: {path: \".gitmodules\"}\n", string(event), "flux.path"},
		{"review branch renders to main", base + "  review: {branch_template: main}\n", string(event), "protected"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := write(strings.ReplaceAll(tc.name, " ", "-")+".yaml", tc.config)
			_, _, err := run(t, tc.event, "apply", "-f", "-", "--config", cfg, "--insecure-plaintext-secrets")
			var stderr bytes.Buffer
			if code := exitCode(&stderr, err); code != 2 {
				t.Errorf("exit %d (%v), want 2", code, err)
			}
			if !strings.Contains(stderr.String(), tc.field) {
				t.Errorf("stderr does not name %s: %s", tc.field, stderr.String())
			}
			for _, secret := range []string{"hunter2-SECRET", "fixture-appcred-secret"} {
				if strings.Contains(stderr.String(), secret) {
					t.Errorf("stderr quotes a secret: %s", stderr.String())
				}
			}
		})
	}
	if out := strings.TrimSpace(git.Git(git.Dir("clusters.git"), "rev-list", "--all")); out != "" {
		t.Errorf("refused input committed:\n%s", out)
	}
	git.Fsck("clusters.git")
}
