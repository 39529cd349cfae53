package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

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
