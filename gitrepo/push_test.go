package gitrepo_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/magnum-gitops/magnum-gitops/gitrepo"
)

// TestPushRejectedIsPermanent: a pre-receive hook that declines the push (a forge's
// protected branch or policy check) fails the change at once with ErrPushRejected and the
// hook's words, instead of being retried; once the hook lets pushes through, the same
// change lands.
func TestPushRejectedIsPermanent(t *testing.T) {
	t.Parallel()
	s := newGitServer(t)
	url := s.newRepo("hooked", true)
	bare := s.dir("hooked")
	hook := filepath.Join(bare, "hooks", "pre-receive")
	os.MkdirAll(filepath.Dir(hook), 0o755)
	if err := os.WriteFile(hook, []byte("#!/bin/sh\necho 'policy: main is frozen for the release' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	before := strings.TrimSpace(git(t, bare, "rev-parse", "main"))
	o := testOptions(url)
	o.MaxAttempts = 10
	o.Backoff, o.MaxBackoff = time.Second, 5*time.Second // a retry would show in the time taken
	r := open(t, o)
	pushes := s.pushes.Load()
	res, err := r.Apply(context.Background(), change("x", map[string]string{"a": "1"}))
	var pe *gitrepo.PushRejectedError
	if !errors.Is(err, gitrepo.ErrPushRejected) || !errors.As(err, &pe) {
		t.Fatalf("err = %v, want ErrPushRejected", err)
	}
	if res.Attempts != 1 || s.pushes.Load()-pushes != 1 {
		t.Errorf("%d attempts, %d pushes: a permanent refusal was retried", res.Attempts, s.pushes.Load()-pushes)
	}
	if pe.Ref != "refs/heads/main" || !strings.Contains(pe.Reason, "pre-receive hook declined") ||
		!strings.Contains(pe.Message, "policy: main is frozen for the release") {
		t.Errorf("rejection = %+v", pe)
	}
	// A group is refused as a whole.
	if _, err := applyGroup(context.Background(), r, []gitrepo.Planned{static(change("y", map[string]string{"b": "1"}))}); !errors.Is(err, gitrepo.ErrPushRejected) {
		t.Errorf("group: %v", err)
	}
	if after := strings.TrimSpace(git(t, bare, "rev-parse", "main")); after != before {
		t.Error("a declined push moved main")
	}
	os.Remove(hook)
	if _, err := r.Apply(context.Background(), change("x", map[string]string{"a": "1"})); err != nil {
		t.Errorf("after the hook is gone: %v", err)
	}
}
