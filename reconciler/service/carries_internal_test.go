package service

import (
	"context"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/gitrepo"
	"github.com/magnum-gitops/magnum-gitops/internal/gitserver"
	"github.com/magnum-gitops/magnum-gitops/reconciler"
)

// TestCarries: the one "applied?" rule in review mode, on a real Git server, with main
// moved only by squash merges (new commits, other messages): a delete's event is applied
// once main's record is its record, and stays applied after its next step rewrote the
// directory's kustomization.yaml and removed the Secrets; that step is applied only once
// main holds the files it changed; a later event's record takes the first back.
func TestCarries(t *testing.T) {
	t.Parallel()
	git := gitserver.Start(t)
	repo, err := gitrepo.Open(context.Background(), gitrepo.Options{URL: git.Init("clusters.git"),
		Author: gitrepo.Signature{Name: "magnum-gitops", Email: "m@example.org"}})
	if err != nil {
		t.Fatal(err)
	}
	rec := reconciler.ClusterRecord{Root: "clusters/magnum", Namespace: "magnum-p1", StackID: "prod-a-x"}
	dir := "clusters/magnum/magnum-p1/prod-a-x/"
	commit := func(branch string, files map[string]string) string {
		t.Helper()
		c := gitrepo.Change{Subject: "change", Branch: branch, Files: map[string][]byte{}}
		for p, v := range files {
			c.Files[dir+p] = []byte(v)
			if v == "" {
				c.Files[dir+p] = nil
			}
		}
		res, err := repo.Apply(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		return res.Commit.String()
	}
	created := map[string]string{"magnum-cluster.yaml": "create", "helmrelease.yaml": "hr", "secret-ca.yaml": "ca",
		"kustomization.yaml": "hr secret-ca"}
	m0 := commit("", created)
	deleted := map[string]string{"magnum-cluster.yaml": "delete", "helmrelease.yaml": "", "kustomization.yaml": "secret-ca"}
	del := commit("magnum/prod-a-x/delete", deleted)
	m1 := commit("", deleted) // the squash
	secrets := map[string]string{"secret-ca.yaml": "", "kustomization.yaml": ""}
	step := commit("magnum/prod-a-x/delete-secretsremoved", secrets)
	m2 := commit("", secrets)
	m3 := commit("", map[string]string{"magnum-cluster.yaml": "create again", "helmrelease.yaml": "hr"})

	s := &Service{o: Options{Sink: &reconciler.GitSink{Repo: repo, ReviewBranch: "magnum/{{.StackID}}/{{.EventID}}"}}}
	at := func(c string) string { return "main@sha1:" + c }
	for _, tc := range []struct {
		name            string
		applied, commit string
		want            bool
	}{
		{"the delete before its merge", at(m0), del, false},
		{"the delete squashed", at(m1), del, true},
		{"the delete after its next step", at(m2), del, true},
		{"the step before its merge", at(m1), step, false},
		{"the step squashed", at(m2), step, true},
		{"the delete after a later event", at(m3), del, false},
		{"a revision not fetched", at("0123456789012345678901234567890123456789"), del, false},
	} {
		if got := s.carries(tc.applied, rec, tc.commit); got != tc.want {
			t.Errorf("%s: carries = %v, want %v", tc.name, got, tc.want)
		}
	}
}
