package main

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestResyncSwitchesLayout: switching an existing repository from per-namespace to
// branch-per-namespace with `magnum-gitops resync` publishes every namespace's branch and
// the root's, and commits the GitRepositories pointed at them, without changing a
// HelmRelease; the published branches hold exactly what main holds; a second resync
// moves nothing.
func TestResyncSwitchesLayout(t *testing.T) {
	cfg, remote := committingConfig(t)
	base, _ := os.ReadFile(cfg)
	layout := func(name string) {
		t.Helper()
		doc := append(base, "flux:\n  layout: "+name+"\n  git: {url: \"https://git.example.org/cloud/magnum-clusters.git\", secret_ref: magnum-clusters-git}\n"...)
		if err := os.WriteFile(cfg, doc, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	git := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("git", append([]string{"-C", remote}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	layout("per-namespace")
	if _, _, err := run(t, "", "apply", "-f", fixture, "--config", cfg); err != nil {
		t.Fatal(err)
	}
	const ns = "clusters/magnum/magnum-9f3c1b2a4d5e4f6a8b7c6d5e4f3a2b1c"
	before := git("rev-parse", "main")

	layout("branch-per-namespace")
	if _, stderr, err := run(t, "", "resync", "--config", cfg); err != nil || !strings.Contains(stderr, "1 clusters changed") {
		t.Fatalf("resync: %v\n%s", err, stderr)
	}
	after := git("rev-parse", "main")
	if changed := git("diff", "--name-only", before, after); changed != "clusters/magnum/flux/gitrepository-magnum-9f3c1b2a4d5e4f6a8b7c6d5e4f3a2b1c.yaml" {
		t.Errorf("the switch changed\n%s\nwant the namespace's GitRepository alone", changed)
	}
	repo := git("show", after+":clusters/magnum/flux/gitrepository-magnum-9f3c1b2a4d5e4f6a8b7c6d5e4f3a2b1c.yaml")
	if !strings.Contains(repo, "branch: magnum-gitops/"+ns+"\n") || strings.Contains(repo, "sparseCheckout") {
		t.Errorf("the namespace's GitRepository:\n%s", repo)
	}
	for branch, dirs := range map[string][]string{
		"magnum-gitops/" + ns:                {ns},
		"magnum-gitops/clusters/magnum/flux": {"clusters/magnum/flux", "clusters/magnum/sources"},
	} {
		held := git("ls-tree", "--name-only", "-r", "-d", branch)
		for _, d := range dirs {
			if git("rev-parse", branch+":"+d) != git("rev-parse", after+":"+d) {
				t.Errorf("%s holds another %s than main", branch, d)
			}
		}
		// Every directory the branch holds leads to one of dirs or is inside one.
		for _, h := range strings.Fields(held) {
			if !slices.ContainsFunc(dirs, func(d string) bool {
				return strings.HasPrefix(d+"/", h+"/") || strings.HasPrefix(h+"/", d+"/")
			}) {
				t.Errorf("%s holds %s, outside %v", branch, h, dirs)
			}
		}
	}
	refs := git("for-each-ref", "--format=%(refname) %(objectname)")
	if _, stderr, err := run(t, "", "resync", "--config", cfg); err != nil || !strings.Contains(stderr, "0 clusters changed") {
		t.Fatalf("second resync: %v\n%s", err, stderr)
	}
	if again := git("for-each-ref", "--format=%(refname) %(objectname)"); again != refs {
		t.Errorf("a second resync moved refs:\n%s\nwas\n%s", again, refs)
	}
}
