package gitrepo_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/gitrepo"
)

// sealed imitates a SOPS encoder: the file holds a digest of the plaintext and a random
// "ciphertext", and the encoder keeps the existing file when its digest matches, so the
// same secret rendered twice is byte-identical.
func sealed(base gitrepo.Tree, path, plaintext string) ([]byte, error) {
	digest := "digest: " + plaintext + "\n"
	old, ok, err := base.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if ok && bytes.HasPrefix(old, []byte(digest)) {
		return old, nil
	}
	nonce := make([]byte, 8)
	rand.Read(nonce)
	return []byte(digest + "ciphertext: " + hex.EncodeToString(nonce) + "\n"), nil
}

func sealBuilder(calls *atomic.Int32, path, plaintext string) gitrepo.Builder {
	return func(base gitrepo.Tree) (gitrepo.Change, error) {
		calls.Add(1)
		b, err := sealed(base, path, plaintext)
		if err != nil {
			return gitrepo.Change{}, err
		}
		return gitrepo.Change{Subject: "seal " + path, Files: map[string][]byte{path: b}}, nil
	}
}

// TestApplyBuilderReRendersOnRefresh: two writers render the same secret from a stale
// head. The first pushes; the second's push is refused, its builder runs again on the new
// head, reuses the first writer's ciphertext, and finds nothing to do — where a static
// change with its own ciphertext is a conflict.
func TestApplyBuilderReRendersOnRefresh(t *testing.T) {
	t.Parallel()
	s := newGitServer(t)
	url := s.newRepo("rerender", true)
	ctx := context.Background()
	const path = "c/p1/secret.sops.yaml"

	a, b := open(t, testOptions(url)), open(t, testOptions(url))
	var aCalls, bCalls atomic.Int32
	if res, err := a.ApplyBuilder(ctx, sealBuilder(&aCalls, path, "password-1")); err != nil || res.NoOp {
		t.Fatalf("first writer: %+v %v", res, err)
	}
	first, _ := fileAt(t, s.dir("rerender"), "main", path)

	// b is still at the seed: its first build has a fresh nonce and its push is refused.
	res, err := b.ApplyBuilder(ctx, sealBuilder(&bCalls, path, "password-1"))
	if err != nil {
		t.Fatalf("second writer with the same intent: %v", err)
	}
	if !res.NoOp || res.Attempts != 2 || bCalls.Load() != 2 {
		t.Errorf("second writer: %+v after %d builder calls, want a no-op found on the second attempt", res, bCalls.Load())
	}
	if got, _ := fileAt(t, s.dir("rerender"), "main", path); !bytes.Equal(got, first) {
		t.Errorf("the ciphertext changed: %q → %q", first, got)
	}

	// The same situation with a static change (its own ciphertext) is a conflict.
	c := open(t, testOptions(url))
	if _, err := a.ApplyBuilder(ctx, sealBuilder(&aCalls, path, "password-2")); err != nil {
		t.Fatal(err)
	}
	static := change("seal statically", map[string]string{path: "digest: password-2\nciphertext: other\n"})
	if _, err := c.Apply(ctx, static); !errors.Is(err, gitrepo.ErrConflict) {
		t.Errorf("static change over a re-sealed secret: err = %v, want a conflict", err)
	}
	// A builder whose re-render still wants other content conflicts too.
	var cCalls atomic.Int32
	d := open(t, testOptions(url))
	if _, err := a.ApplyBuilder(ctx, sealBuilder(&aCalls, path, "password-3")); err != nil {
		t.Fatal(err)
	}
	if _, err := d.ApplyBuilder(ctx, sealBuilder(&cCalls, path, "password-4")); !errors.Is(err, gitrepo.ErrConflict) {
		t.Errorf("a different secret over a changed one: err = %v, want a conflict", err)
	}
	checkRepo(t, s.dir("rerender"))
	onlyFastForwards(t, s.dir("rerender"), "main")
}

// TestApplyBuilderErrors: the builder's error comes back as is, an invalid change is
// refused, and a builder may not move its change to another branch between attempts.
func TestApplyBuilderErrors(t *testing.T) {
	t.Parallel()
	s := newGitServer(t)
	url := s.newRepo("builder-errors", true)
	ctx := context.Background()
	r := open(t, testOptions(url))
	boom := errors.New("render failed")

	stale := open(t, testOptions(url))
	if _, err := r.Apply(ctx, change("move main", map[string]string{"x": "1"})); err != nil {
		t.Fatal(err)
	}
	before := strings.TrimSpace(git(t, s.dir("builder-errors"), "rev-parse", "main"))
	var n atomic.Int32
	cases := []struct {
		name  string
		repo  *gitrepo.Repo
		build gitrepo.Builder
		want  error
	}{
		{"builder error", r, func(gitrepo.Tree) (gitrepo.Change, error) { return gitrepo.Change{}, boom }, boom},
		{"nil builder", r, nil, gitrepo.ErrInvalidChange},
		{"invalid path", r, func(gitrepo.Tree) (gitrepo.Change, error) {
			return change("x", map[string]string{"a/.GIT/config": "1"}), nil
		}, gitrepo.ErrInvalidChange},
		{"branch moved between attempts", stale, func(gitrepo.Tree) (gitrepo.Change, error) {
			c := change("y", map[string]string{"y": "1"})
			if n.Add(1) > 1 {
				c.Branch = "review/elsewhere"
			}
			return c, nil
		}, gitrepo.ErrInvalidChange},
	}
	for _, tc := range cases {
		if _, err := tc.repo.ApplyBuilder(ctx, tc.build); !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
	}
	if after := strings.TrimSpace(git(t, s.dir("builder-errors"), "rev-parse", "main")); after != before {
		t.Error("a failed builder reached the remote")
	}
}
