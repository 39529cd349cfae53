package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

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
