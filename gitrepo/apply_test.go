package gitrepo_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/magnum-gitops/magnum-gitops/gitrepo"
)

func testOptions(url string) gitrepo.Options {
	return gitrepo.Options{
		URL:     url,
		Author:  gitrepo.Signature{Name: "magnum-gitops", Email: "magnum-gitops@example.org"},
		Backoff: 10 * time.Millisecond, MaxBackoff: 200 * time.Millisecond,
		Now: func() time.Time { return time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC) },
	}
}

func open(t testing.TB, o gitrepo.Options) *gitrepo.Repo {
	t.Helper()
	r, err := gitrepo.Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func change(subject string, files map[string]string) gitrepo.Change {
	c := gitrepo.Change{Subject: subject, Files: map[string][]byte{}}
	for p, v := range files {
		if v == "<delete>" {
			c.Files[p] = nil
		} else {
			c.Files[p] = []byte(v)
		}
	}
	return c
}

func TestApplyCommitsAndPushes(t *testing.T) {
	t.Parallel()
	s := newGitServer(t)
	url := s.newRepo("clusters", true)
	r := open(t, testOptions(url))
	c := change("magnum: create cluster prod-a (prod-a-2b7x) in project p1", map[string]string{
		"clusters/magnum/magnum-p1/prod-a-2b7x/helmrelease.yaml":   "kind: HelmRelease\n",
		"clusters/magnum/magnum-p1/prod-a-2b7x/kustomization.yaml": "resources: [helmrelease.yaml]\n",
		"clusters/magnum/magnum-p1/namespace.yaml":                 "kind: Namespace\n",
	})
	c.Body = "control plane: 3 × m1.large\ndefault-worker: 3 × m1.medium"
	c.Trailers = []gitrepo.Trailer{{Key: "Magnum-Cluster-UUID", Value: "3e9b7c52"}, {Key: "Magnum-Operation", Value: "create_cluster"}}
	res, err := r.Apply(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if res.NoOp || res.Commit.IsZero() || res.Attempts != 1 || res.Branch != "main" {
		t.Errorf("result = %+v", res)
	}
	clone := checkRepo(t, s.dir("clusters"))
	files := git(t, clone, "ls-tree", "-r", "--name-only", "HEAD")
	want := "README.md\nclusters/magnum/magnum-p1/namespace.yaml\nclusters/magnum/magnum-p1/prod-a-2b7x/helmrelease.yaml\nclusters/magnum/magnum-p1/prod-a-2b7x/kustomization.yaml\n"
	if files != want {
		t.Errorf("tree:\n%s\nwant:\n%s", files, want)
	}
	msg := git(t, clone, "log", "-1", "--format=%B")
	for _, w := range []string{"magnum: create cluster prod-a (prod-a-2b7x) in project p1\n\ncontrol plane: 3 × m1.large",
		"Magnum-Cluster-UUID: 3e9b7c52", "Magnum-Operation: create_cluster"} {
		if !strings.Contains(msg, w) {
			t.Errorf("message lacks %q:\n%s", w, msg)
		}
	}
	if tr := git(t, clone, "log", "-1", "--format=%(trailers:key=Magnum-Operation,valueonly)"); strings.TrimSpace(tr) != "create_cluster" {
		t.Errorf("git does not parse the trailers: %q", tr)
	}
	if got := strings.TrimSpace(git(t, clone, "rev-parse", "HEAD")); got != res.Commit.String() {
		t.Errorf("remote head %s, result %s", got, res.Commit)
	}
	if n := onlyFastForwards(t, s.dir("clusters"), "main"); n != 2 {
		t.Errorf("%d reflog entries, want 2 (seed, our push)", n)
	}
}

func TestNoOpMakesNoCommit(t *testing.T) {
	t.Parallel()
	s := newGitServer(t)
	r := open(t, testOptions(s.newRepo("r", true)))
	c := change("add a", map[string]string{"a/b.yaml": "x: 1\n"})
	if _, err := r.Apply(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	before := s.requests.Load()
	head := strings.TrimSpace(git(t, s.dir("r"), "rev-parse", "main"))
	res, err := r.Apply(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if !res.NoOp || !res.Commit.IsZero() {
		t.Errorf("re-applying the same change: %+v, want a no-op", res)
	}
	if got := strings.TrimSpace(git(t, s.dir("r"), "rev-parse", "main")); got != head {
		t.Error("a no-op moved the branch")
	}
	if s.requests.Load() != before {
		t.Errorf("a no-op talked to the server (%d requests)", s.requests.Load()-before)
	}
	// Deleting a path that does not exist is a no-op too.
	if res, err := r.Apply(context.Background(), change("rm", map[string]string{"nope/x": "<delete>"})); err != nil || !res.NoOp {
		t.Errorf("deleting a missing path: %+v %v", res, err)
	}
}

func TestDeletePrunesEmptyTrees(t *testing.T) {
	t.Parallel()
	s := newGitServer(t)
	r := open(t, testOptions(s.newRepo("r", true)))
	ctx := context.Background()
	if _, err := r.Apply(ctx, change("add", map[string]string{"c/ns/r1/a.yaml": "a", "c/ns/r1/b.yaml": "b", "c/ns/r2/a.yaml": "a"})); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Apply(ctx, change("delete r1", map[string]string{"c/ns/r1/a.yaml": "<delete>", "c/ns/r1/b.yaml": "<delete>"})); err != nil {
		t.Fatal(err)
	}
	clone := checkRepo(t, s.dir("r"))
	if got := git(t, clone, "ls-tree", "-r", "-t", "--name-only", "HEAD"); got != "README.md\nc\nc/ns\nc/ns/r2\nc/ns/r2/a.yaml\n" {
		t.Errorf("tree after delete:\n%s", got)
	}
	if _, err := r.Apply(ctx, change("delete r2", map[string]string{"c/ns/r2/a.yaml": "<delete>"})); err != nil {
		t.Fatal(err)
	}
	clone = checkRepo(t, s.dir("r"))
	if got := git(t, clone, "ls-tree", "-r", "-t", "--name-only", "HEAD"); got != "README.md\n" {
		t.Errorf("empty directories left behind:\n%s", got)
	}
}

func TestBinarySafeAndEmptyRemote(t *testing.T) {
	t.Parallel()
	s := newGitServer(t)
	r := open(t, testOptions(s.newRepo("empty", false)))
	bin := []byte{0, 1, 2, 0xff, 0xfe, '\n', 0, 'x', '\r', '\n'}
	res, err := r.Apply(context.Background(), change("first commit", map[string]string{"bin/blob": string(bin), "z.txt": "z"}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Commit.IsZero() {
		t.Fatal("no commit on an empty remote")
	}
	checkRepo(t, s.dir("empty"))
	got, ok := fileAt(t, s.dir("empty"), "main", "bin/blob")
	if !ok || !bytes.Equal(got, bin) {
		t.Errorf("binary content = %q, want %q", got, bin)
	}
}

func TestInvalidChanges(t *testing.T) {
	t.Parallel()
	s := newGitServer(t)
	r := open(t, testOptions(s.newRepo("r", true)))
	before := strings.TrimSpace(git(t, s.dir("r"), "rev-parse", "main"))
	for _, c := range []gitrepo.Change{
		change("x", map[string]string{"/abs": "1"}),
		change("x", map[string]string{"a/../b": "1"}),
		change("x", map[string]string{".git/config": "1"}),
		change("two\nlines", map[string]string{"a": "1"}),
		{Subject: "x", Files: map[string][]byte{"a": []byte("1")}, Trailers: []gitrepo.Trailer{{Key: "Bad Key", Value: "v"}}},
		{Subject: "x", Files: map[string][]byte{"a": []byte("1")}, Branch: "bad..branch"},
		{Subject: "nothing"},
	} {
		if _, err := r.Apply(context.Background(), c); !errors.Is(err, gitrepo.ErrInvalidChange) {
			t.Errorf("%q %v: err = %v, want ErrInvalidChange", c.Subject, c.Files, err)
		}
	}
	if after := strings.TrimSpace(git(t, s.dir("r"), "rev-parse", "main")); after != before {
		t.Error("an invalid change reached the remote")
	}
}

func TestFileRemote(t *testing.T) {
	t.Parallel()
	dir := bareRepo(t, t.TempDir()+"/repo.git")
	r := open(t, testOptions("file://"+dir))
	if _, err := r.Apply(context.Background(), change("one", map[string]string{"x/y": "1"})); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Apply(context.Background(), change("two", map[string]string{"x/z": "2"})); err != nil {
		t.Fatal(err)
	}
	clone := checkRepo(t, dir)
	if got := git(t, clone, "log", "--format=%s"); got != "two\none\n" {
		t.Errorf("log = %q", got)
	}
}

// TestFilesAndDirectoriesNeverReplaceEachOther: a change names files; writing or deleting
// a path that is a directory, or writing below a file, is refused and names the path,
// where a careless tree builder would drop a whole directory or a file.
func TestFilesAndDirectoriesNeverReplaceEachOther(t *testing.T) {
	t.Parallel()
	s := newGitServer(t)
	r := open(t, testOptions(s.newRepo("shapes", true)))
	ctx := context.Background()
	if _, err := r.Apply(ctx, change("seed", map[string]string{"c/prod/a.yaml": "a", "c/file": "f"})); err != nil {
		t.Fatal(err)
	}
	before := strings.TrimSpace(git(t, s.dir("shapes"), "rev-parse", "main"))
	for _, tc := range []struct {
		files map[string]string
		want  string
	}{
		{map[string]string{"c/prod": "x"}, `"c/prod" is a directory`},
		{map[string]string{"c/prod": "<delete>"}, `"c/prod" is a directory`},
		{map[string]string{"c/file/x.yaml": "x"}, `"c/file" is not a directory`},
		{map[string]string{"README.md/x": "x"}, `"README.md" is not a directory`},
	} {
		_, err := r.Apply(ctx, change("x", tc.files))
		if !errors.Is(err, gitrepo.ErrInvalidChange) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want %s", tc.files, err, tc.want)
		}
	}
	// Deleting below a file deletes nothing: a no-op.
	if res, err := r.Apply(ctx, change("x", map[string]string{"c/file/x.yaml": "<delete>"})); err != nil || !res.NoOp {
		t.Errorf("deleting below a file: %+v %v", res, err)
	}
	if after := strings.TrimSpace(git(t, s.dir("shapes"), "rev-parse", "main")); after != before {
		t.Error("a refused change reached the remote")
	}
	// The way to turn a file into a directory: delete it, then write below it — two
	// commits of one group, one push.
	res, err := applyGroup(ctx, r, []gitrepo.Planned{
		static(change("rm file", map[string]string{"c/file": "<delete>"})),
		static(change("dir", map[string]string{"c/file/x.yaml": "x"})),
	})
	if err != nil || res[0].Err != nil || res[1].Err != nil {
		t.Fatalf("%+v %v", res, err)
	}
	if got, ok := fileAt(t, s.dir("shapes"), "main", "c/file/x.yaml"); !ok || string(got) != "x" {
		t.Errorf("c/file/x.yaml = %q", got)
	}
}
