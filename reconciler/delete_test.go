package reconciler_test

import (
	"context"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/gitrepo"
	"github.com/magnum-gitops/magnum-gitops/reconciler"
)

// deleted is created with the cluster's delete_cluster event committed: the delete's first
// phase, and the record its later commits are made for.
func deleted(t *testing.T) (*reconciler.Pipeline, *reconciler.GitSink, string, reconciler.ClusterRecord) {
	t.Helper()
	p, sink, dir := created(t)
	del := event(t, "08-prod-a-delete.yaml")
	out, err := sink.Apply(context.Background(), p, del)
	if err != nil {
		t.Fatal(err)
	}
	return p, sink, dir, reconciler.ClusterRecord{Event: del, StackID: out.Plan.Result.ReleaseName, Namespace: out.Plan.Result.Namespace}
}

// TestDeleteCommitsFollowTheHead: the delete's later commits are built on the head they
// are pushed on. When an operator reverts the delete_cluster commit (the HelmRelease comes
// back, and the cluster it recreates needs its Secrets), neither RemoveSecrets nor
// FinishDelete removes anything, whether this clone has fetched the revert or learns of
// it from the refused push.
func TestDeleteCommitsFollowTheHead(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name            string
		revert, fetched bool
	}{
		{name: "no revert"},
		{name: "revert fetched", revert: true, fetched: true},
		{name: "revert on the remote only", revert: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			p, sink, dir, rec := deleted(t)
			clusterDir := generator.ClusterDir(p.Config, rec.Namespace, rec.StackID)
			if tc.revert {
				work := filepath.Join(t.TempDir(), "work")
				for _, args := range [][]string{{"clone", "-q", dir, work}, {"-C", work, "-c", "user.name=ops", "-c", "user.email=ops@example.org",
					"revert", "--no-edit", "HEAD"}, {"-C", work, "push", "-q", "origin", "main"}} {
					if b, err := exec.Command("git", args...).CombinedOutput(); err != nil {
						t.Fatalf("git %v: %v\n%s", args, err, b)
					}
				}
				if tc.fetched {
					if err := sink.Repo.Fetch(ctx); err != nil {
						t.Fatal(err)
					}
				}
			}
			before := gitOut(t, dir, "rev-parse", "main")
			secrets, commit, err := sink.RemoveSecrets(ctx, p.Config, rec)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.revert {
				if commit == "" || len(secrets) != 5 {
					t.Fatalf("RemoveSecrets: commit %q, Secrets %v; want a commit and the cluster's 5 Secrets", commit, secrets)
				}
				if commit, err := sink.FinishDelete(ctx, p.Config, rec); err != nil || commit == "" {
					t.Fatalf("FinishDelete: commit %q, %v", commit, err)
				}
				if files := gitOut(t, dir, "ls-tree", "-r", "--name-only", "main"); strings.Contains(files, clusterDir+"/") {
					t.Errorf("the directory is still in Git:\n%s", files)
				}
				return
			}
			if commit != "" || len(secrets) != 0 {
				t.Errorf("RemoveSecrets after a revert: commit %q, Secrets %v; want nothing", commit, secrets)
			}
			if commit, err := sink.FinishDelete(ctx, p.Config, rec); err != nil || commit != "" {
				t.Errorf("FinishDelete after a revert: commit %q, %v; want nothing", commit, err)
			}
			if after := gitOut(t, dir, "rev-parse", "main"); after != before {
				t.Errorf("main moved from %s to %s after the revert:\n%s", before, after, gitOut(t, dir, "log", "-2", "--stat", "main"))
			}
			files := gitOut(t, dir, "ls-tree", "-r", "--name-only", "main", clusterDir)
			for _, want := range []string{"helmrelease.yaml", "secret-cloud-credentials.sops.yaml", "secret-ca.sops.yaml"} {
				if !strings.Contains(files, path.Join(clusterDir, want)) {
					t.Errorf("%s left Git after the revert:\n%s", want, files)
				}
			}
		})
	}
}

// TestSecretsRemoval: a service that did not make a delete's RemoveSecrets commit finds it,
// with the Secrets it named, in the history its clone holds; a clone whose history does
// not reach it gets the oldest commit it holds, which came after it (Flux must apply that
// one first), and every Secret name the cluster may have had.
func TestSecretsRemoval(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, sink, dir, rec := deleted(t)
	named, removal, err := sink.RemoveSecrets(ctx, p.Config, rec)
	if err != nil || removal == "" {
		t.Fatalf("RemoveSecrets: %q, %v", removal, err)
	}
	for i := range 3 {
		if _, err := sink.Repo.Apply(ctx, gitrepo.Change{Files: map[string][]byte{"README.md": []byte(strings.Repeat("#", i+1))}, Subject: "readme"}); err != nil {
			t.Fatal(err)
		}
	}
	all := len(generator.SecretSuffixes)
	for _, tc := range []struct {
		name    string
		history gitrepo.History
		commit  string
		secrets int
	}{
		{"the whole history", gitrepo.History{}, removal, len(named)},
		{"a history that reaches it", gitrepo.History{Commits: 4}, removal, len(named)},
		{"a history that does not", gitrepo.History{Commits: 2}, strings.TrimSpace(gitOut(t, dir, "rev-parse", "main~1")), all},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo, err := gitrepo.Open(ctx, gitrepo.Options{URL: "file://" + dir, History: tc.history,
				Author: gitrepo.Signature{Name: "magnum-gitops", Email: "m@example.org"}})
			if err != nil {
				t.Fatal(err)
			}
			commit, secrets, err := reconciler.SecretsRemoval(ctx, repo, rec)
			if err != nil || commit != tc.commit || len(secrets) != tc.secrets {
				t.Errorf("SecretsRemoval = %s, %d Secrets, %v; want %s, %d", commit, len(secrets), err, tc.commit, tc.secrets)
			}
		})
	}
}
