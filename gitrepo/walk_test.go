package gitrepo_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/magnum-gitops/magnum-gitops/gitrepo"
)

// TestWalk: the first-parent history newest first, with trailers parsed, including a
// commit a human made with the git CLI; ErrStopWalk ends the walk without an error.
func TestWalk(t *testing.T) {
	t.Parallel()
	s := newGitServer(t)
	url := s.newRepo("walk", true)
	ctx := context.Background()
	r := open(t, testOptions(url))
	var hashes []string
	for _, id := range []string{"e1", "e2"} {
		c := change("magnum: event "+id, map[string]string{"c/" + id: id})
		c.Body = "what happened\n\nin two paragraphs"
		c.Trailers = []gitrepo.Trailer{{Key: "Magnum-Event-ID", Value: id}, {Key: "Magnum-Operation", Value: "create_cluster"}}
		res, err := r.Apply(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		hashes = append(hashes, res.Commit.String())
	}
	work := t.TempDir()
	git(t, "", "clone", "-q", s.dir("walk"), work)
	os.WriteFile(filepath.Join(work, "h"), []byte("h"), 0o644)
	git(t, work, "add", "h")
	git(t, work, "commit", "-q", "-m", "human: Fix: not a trailer", "-m", "Signed-off-by: A Human <human@example.org>")
	git(t, work, "push", "-q", "origin", "HEAD:main")
	if err := r.Fetch(ctx); err != nil {
		t.Fatal(err)
	}

	var got []gitrepo.CommitInfo
	if err := r.Walk(ctx, func(c gitrepo.CommitInfo) error { got = append(got, c); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 {
		t.Fatalf("%d commits, want 4 (human, e2, e1, seed)", len(got))
	}
	if got[0].Subject != "human: Fix: not a trailer" || len(got[0].Trailers) != 1 || got[0].Trailers[0] != (gitrepo.Trailer{Key: "Signed-off-by", Value: "A Human <human@example.org>"}) {
		t.Errorf("human commit: %+v", got[0])
	}
	for i, id := range []string{"e2", "e1"} {
		c := got[i+1]
		if c.Hash.String() != hashes[1-i] || c.Subject != "magnum: event "+id || c.Body != "what happened\n\nin two paragraphs" {
			t.Errorf("commit %d: %+v", i+1, c)
		}
		if v, ok := c.Trailer("magnum-event-id"); !ok || v != id {
			t.Errorf("commit %d: Magnum-Event-ID = %q %v", i+1, v, ok)
		}
		if v, _ := c.Trailer("Magnum-Operation"); v != "create_cluster" {
			t.Errorf("commit %d: Magnum-Operation = %q", i+1, v)
		}
		if c.Author.Email != "magnum-gitops@example.org" || len(c.Parents) != 1 || c.Parents[0] != got[i+2].Hash {
			t.Errorf("commit %d: author %+v, parents %v", i+1, c.Author, c.Parents)
		}
	}
	if got[3].Subject != "initial" || len(got[3].Trailers) != 0 || len(got[3].Parents) != 0 {
		t.Errorf("seed commit: %+v", got[3])
	}

	n := 0
	err := r.Walk(ctx, func(c gitrepo.CommitInfo) error {
		n++
		if _, ok := c.Trailer("Magnum-Event-ID"); ok {
			return gitrepo.ErrStopWalk
		}
		return nil
	})
	if err != nil || n != 2 {
		t.Errorf("stopping at the newest event: %d commits, %v", n, err)
	}
	boom := errors.New("boom")
	if err := r.Walk(ctx, func(gitrepo.CommitInfo) error { return boom }); !errors.Is(err, boom) {
		t.Errorf("callback error: %v", err)
	}
	empty := open(t, testOptions(s.newRepo("walk-empty", false)))
	if err := empty.Walk(ctx, func(gitrepo.CommitInfo) error { t.Error("a commit in an empty repository"); return nil }); err != nil {
		t.Error(err)
	}
}

// TestWalkShallow: a clone of Depth commits holds the newest Depth commits of a longer
// history; Walk ends at the oldest of them without an error, Contains answers for the
// commits it holds, and the clone commits, pushes and fetches like a full one, keeping
// its boundary.
func TestWalkShallow(t *testing.T) {
	t.Parallel()
	s := newGitServer(t)
	url := s.newRepo("shallow", true)
	ctx := context.Background()
	work := t.TempDir()
	git(t, "", "clone", "-q", s.dir("shallow"), work)
	for i := range 30 {
		os.WriteFile(filepath.Join(work, "f"), []byte{byte('a' + i)}, 0o644)
		git(t, work, "add", "f")
		git(t, work, "commit", "-q", "-m", "human "+string(rune('a'+i)))
	}
	git(t, work, "push", "-q", "origin", "HEAD:main")
	history := strings.Fields(git(t, work, "rev-list", "--first-parent", "HEAD")) // newest first: 30 and the seed

	o := testOptions(url)
	o.History = gitrepo.History{Commits: 5}
	var warned []string // a walk that ends at the boundary has found no damage
	o.Warn = func(msg string) { warned = append(warned, msg) }
	r := open(t, o)
	walk := func() []string {
		t.Helper()
		var got []string
		if err := r.Walk(ctx, func(c gitrepo.CommitInfo) error { got = append(got, c.Hash.String()); return nil }); err != nil {
			t.Fatalf("walk: %v", err)
		}
		return got
	}
	if diff := cmp.Diff(history[:5], walk()); diff != "" {
		t.Errorf("walk of a clone of depth 5 (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		commit string
		want   bool
	}{{history[4], true}, {history[0], true}, {history[5], false}} {
		if got, err := r.Contains(history[0], tc.commit); err != nil || got != tc.want {
			t.Errorf("Contains(head, %s) = %v, %v; want %v", tc.commit[:7], got, err, tc.want)
		}
	}

	res, err := r.Apply(ctx, change("ours", map[string]string{"g": "g"}))
	if err != nil {
		t.Fatalf("apply on a shallow clone: %v", err)
	}
	git(t, work, "pull", "-q", "--ff-only", "origin", "main")
	os.WriteFile(filepath.Join(work, "f"), []byte("theirs"), 0o644)
	git(t, work, "commit", "-q", "-a", "-m", "theirs")
	git(t, work, "push", "-q", "origin", "HEAD:main")
	if err := r.Fetch(ctx); err != nil {
		t.Fatalf("fetch into a shallow clone: %v", err)
	}
	theirs := strings.TrimSpace(git(t, work, "rev-parse", "HEAD"))
	if diff := cmp.Diff(append([]string{theirs, res.Commit.String()}, history[:5]...), walk()); diff != "" {
		t.Errorf("walk after a push and a fetch (-want +got):\n%s", diff)
	}
	git(t, s.dir("shallow"), "fsck", "--strict")
	if len(warned) > 0 {
		t.Errorf("the shallow clone was taken for damaged: %q", warned)
	}
}
