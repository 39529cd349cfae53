package reconciler

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/gitrepo"
	"github.com/magnum-gitops/magnum-gitops/internal/gitserver"
)

// TestCommitter: the members of a group hand their plans over in any order (here the
// reverse of their places) and each gets its own results from its future; the committer
// commits once every member has, in the members' order, with one push, and tells the
// group's cost once. A member with no plans gets none.
func TestCommitter(t *testing.T) {
	t.Parallel()
	remote, repo := testRemote(t)
	plan := func(name string) planFunc {
		return func(gitrepo.Tree) (gitrepo.Change, error) {
			return gitrepo.Change{Subject: name, Files: map[string][]byte{name + ".yaml": []byte(name)}}, nil
		}
	}
	c := newCommitter(context.Background(), &GitSink{Repo: repo}, 4)
	futures := make([]*future, 4)
	done := make(chan struct{})
	for _, m := range []int{3, 2, 1, 0} {
		go func() {
			var plans []planFunc
			if m != 2 {
				plans = []planFunc{plan(fmt.Sprintf("m%d-a", m)), plan(fmt.Sprintf("m%d-b", m))}
			}
			futures[m] = c.submit(m, plans, groupStats{Events: 1})
			done <- struct{}{}
		}()
		<-done // one at a time, in this order
	}
	for m, f := range futures {
		results, err := f.wait()
		want := 2
		if m == 2 {
			want = 0
		}
		if err != nil || len(results) != want {
			t.Fatalf("member %d: %d results, %v; want %d", m, len(results), err, want)
		}
		for _, r := range results {
			if r.Err != nil || r.NoOp || r.Commit.IsZero() {
				t.Errorf("member %d: %+v", m, r)
			}
		}
	}
	log := strings.Fields(remote.Git(remote.Dir("r.git"), "log", "--reverse", "--format=%s", "main"))
	if got, want := strings.Join(log, " "), "m0-a m0-b m1-a m1-b m3-a m3-b"; got != want {
		t.Errorf("history %q, want %q (the members' order)", got, want)
	}
	if c.stats.Events != 4 || c.stats.Pushes != 1 {
		t.Errorf("the group cost %+v, want 4 events and 1 push", c.stats)
	}
}

// testRemote starts a Git server with an empty repository r.git and opens it.
func testRemote(t *testing.T) (*gitserver.Server, *gitrepo.Repo) {
	t.Helper()
	remote := gitserver.Start(t)
	remote.Init("r.git")
	repo, err := gitrepo.Open(context.Background(), gitrepo.Options{URL: remote.URL + "/r.git",
		Author: gitrepo.Signature{Name: "magnum-gitops", Email: "m@example.org"}})
	if err != nil {
		t.Fatal(err)
	}
	return remote, repo
}
