package gitrepo_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/gitrepo"
)

// TestChangeRefusesWhatFsckWould: NUL in a message part, a trailer breaking its line, and
// tree entry names git fsck --strict rejects are refused with ErrInvalidChange naming the
// part (never quoting the content), and nothing reaches the remote.
func TestChangeRefusesWhatFsckWould(t *testing.T) {
	t.Parallel()
	s := newGitServer(t)
	r := open(t, testOptions(s.newRepo("hygiene", true)))
	before := strings.TrimSpace(git(t, s.dir("hygiene"), "rev-parse", "main"))
	const secret = "s3cr3t-value"
	ok := map[string][]byte{"a": []byte(secret)}
	for _, tc := range []struct {
		name string
		c    gitrepo.Change
		part string
	}{
		{"NUL in subject", gitrepo.Change{Subject: "x\x00y", Files: ok}, "subject"},
		{"newline in subject", gitrepo.Change{Subject: "x\ny", Files: ok}, "subject"},
		{"NUL in body", gitrepo.Change{Subject: "x", Body: "a\x00b", Files: ok}, "body"},
		{"NUL in trailer value", gitrepo.Change{Subject: "x", Files: ok, Trailers: []gitrepo.Trailer{{Key: "K", Value: "v\x00"}}}, "trailers[0]"},
		{"newline in trailer value", gitrepo.Change{Subject: "x", Files: ok, Trailers: []gitrepo.Trailer{{Key: "K", Value: "v\nEvil: 1"}}}, "trailers[0]"},
		{"bad trailer key", gitrepo.Change{Subject: "x", Files: ok, Trailers: []gitrepo.Trailer{{Key: "K:", Value: "v"}}}, "trailers[0]"},
		{"empty segment", gitrepo.Change{Subject: "x", Files: map[string][]byte{"a//b": []byte(secret)}}, "files"},
		{"dot segment", gitrepo.Change{Subject: "x", Files: map[string][]byte{"a/./b": []byte(secret)}}, "files"},
		{"dotdot segment", gitrepo.Change{Subject: "x", Files: map[string][]byte{"a/../b": []byte(secret)}}, "files"},
		{"NUL in name", gitrepo.Change{Subject: "x", Files: map[string][]byte{"a\x00b": []byte(secret)}}, "files"},
		{"trailing slash", gitrepo.Change{Subject: "x", Files: map[string][]byte{"a/": []byte(secret)}}, "files"},
		{"hidden .git", gitrepo.Change{Subject: "x", Files: map[string][]byte{"c/.g\u200cit/hooks/post-checkout": []byte(secret)}}, "files"},
		{"file and directory", gitrepo.Change{Subject: "x", Files: map[string][]byte{"a": []byte(secret), "a/b": nil}}, "files"},
	} {
		_, err := r.Apply(context.Background(), tc.c)
		if !errors.Is(err, gitrepo.ErrInvalidChange) || !strings.Contains(err.Error(), tc.part) {
			t.Errorf("%s: err = %v, want ErrInvalidChange naming %s", tc.name, err, tc.part)
		}
		if err != nil && strings.Contains(err.Error(), secret) {
			t.Errorf("%s: the error quotes the content: %v", tc.name, err)
		}
	}
	if after := strings.TrimSpace(git(t, s.dir("hygiene"), "rev-parse", "main")); after != before {
		t.Error("an invalid change reached the remote")
	}
}

// TestCacheDirAndBatch: a clone kept on disk is reused by the next Open, and a batch of
// changes becomes one commit whose message lists each, later changes winning.
func TestCacheDirAndBatch(t *testing.T) {
	t.Parallel()
	s := newGitServer(t)
	url := s.newRepo("cached", true)
	o := testOptions(url)
	o.CacheDir = t.TempDir()
	r := open(t, o)
	if _, err := r.Apply(context.Background(), change("first", map[string]string{"x": "1"})); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(o.CacheDir, "objects")); err != nil {
		t.Fatalf("no bare clone in the cache dir: %v", err)
	}
	r2 := open(t, o) // reuses and fetches the cached clone
	a := change("magnum: create cluster a", map[string]string{"c/a.yaml": "a", "shared.yaml": "from a"})
	a.Trailers = []gitrepo.Trailer{{Key: "Magnum-Event-ID", Value: "e1"}}
	b := change("magnum: create cluster b", map[string]string{"c/b.yaml": "b", "shared.yaml": "from b"})
	b.Trailers = []gitrepo.Trailer{{Key: "Magnum-Event-ID", Value: "e2"}}
	res, err := r2.Apply(context.Background(), a, b)
	if err != nil || res.NoOp {
		t.Fatalf("%+v %v", res, err)
	}
	clone := checkRepo(t, s.dir("cached"))
	if n := strings.Count(git(t, clone, "log", "--format=%H"), "\n"); n != 3 {
		t.Errorf("%d commits, want seed + first + one batch", n)
	}
	msg := git(t, clone, "log", "-1", "--format=%B")
	for _, want := range []string{"magnum: create cluster a (and 1 more)", "* magnum: create cluster b", "Magnum-Event-ID: e1", "Magnum-Event-ID: e2"} {
		if !strings.Contains(msg, want) {
			t.Errorf("batch message lacks %q:\n%s", want, msg)
		}
	}
	if got, _ := fileAt(t, s.dir("cached"), "main", "shared.yaml"); string(got) != "from b" {
		t.Errorf("shared.yaml = %q, want the later change's", got)
	}
	bad := b
	bad.Branch = "review/x"
	if _, err := r2.Apply(context.Background(), a, bad); !errors.Is(err, gitrepo.ErrInvalidChange) {
		t.Errorf("a batch across branches: %v", err)
	}
}
