package gitrepo_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/gitrepo"
)

// TestConflictReported: a human edits a cluster's file after our clone was made; our change
// to the same file stops with a ConflictError naming it, and the human's edit stays. A
// change to other files is rebuilt on the new head and pushed, and so is one whose content
// the human already wrote.
func TestConflictReported(t *testing.T) {
	t.Parallel()
	s := newGitServer(t)
	url := s.newRepo("conflict", true)
	ctx := context.Background()
	r := open(t, testOptions(url))
	if _, err := r.Apply(ctx, change("create", map[string]string{"c/prod-a/helmrelease.yaml": "replicas: 3\n"})); err != nil {
		t.Fatal(err)
	}

	human := func(content string) {
		work := t.TempDir()
		git(t, "", "clone", "-q", s.dir("conflict"), work)
		os.WriteFile(filepath.Join(work, "c/prod-a/helmrelease.yaml"), []byte(content), 0o644)
		git(t, work, "commit", "-q", "-am", "human edit")
		git(t, work, "push", "-q", "origin", "HEAD:main")
	}
	human("replicas: 4 # hotfix\n")
	_, err := r.Apply(ctx, change("resize", map[string]string{"c/prod-a/helmrelease.yaml": "replicas: 5\n"}))
	var ce *gitrepo.ConflictError
	if !errors.As(err, &ce) || !errors.Is(err, gitrepo.ErrConflict) || len(ce.Paths) != 1 || ce.Paths[0] != "c/prod-a/helmrelease.yaml" {
		t.Fatalf("err = %v, want a conflict on c/prod-a/helmrelease.yaml", err)
	}
	if got, _ := fileAt(t, s.dir("conflict"), "main", "c/prod-a/helmrelease.yaml"); string(got) != "replicas: 4 # hotfix\n" {
		t.Errorf("the human's edit was overwritten: %q", got)
	}

	// Another file: rebuilt on the human's head and pushed, the edit kept.
	human("replicas: 6 # second hotfix\n")
	if _, err := r.Apply(ctx, change("other cluster", map[string]string{"c/prod-b/helmrelease.yaml": "replicas: 2\n"})); err != nil {
		t.Fatalf("a change to another file: %v", err)
	}
	if got, _ := fileAt(t, s.dir("conflict"), "main", "c/prod-a/helmrelease.yaml"); string(got) != "replicas: 6 # second hotfix\n" {
		t.Errorf("prod-a = %q", got)
	}
	// The human already wrote what we want: nothing to fight over.
	human("replicas: 7\n")
	if _, err := r.Apply(ctx, change("resize to 7", map[string]string{"c/prod-a/helmrelease.yaml": "replicas: 7\n"})); err != nil {
		t.Errorf("same content as the remote: %v", err)
	}
	checkRepo(t, s.dir("conflict"))
	onlyFastForwards(t, s.dir("conflict"), "main")
}
