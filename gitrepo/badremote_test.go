package gitrepo_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/gitrepo"
)

func TestBadRemotes(t *testing.T) {
	t.Parallel()
	s := newGitServer(t)
	s.user, s.password = "magnum", "right-password"
	url := s.newRepo("r", true)
	head := func() string { return strings.TrimSpace(git(t, s.dir("r"), "rev-parse", "main")) }
	before := head()
	ctx := context.Background()

	good := testOptions(url)
	good.Auth = gitrepo.Auth{Username: "magnum", Password: "right-password"}
	if _, err := gitrepo.Open(ctx, good); err != nil {
		t.Fatalf("right credentials: %v", err)
	}
	// An access token is sent as the basic-auth password (GitHub, GitLab and Gitea accept
	// tokens this way).
	tok := testOptions(url)
	tok.Auth = gitrepo.Auth{Username: "magnum", Token: "right-password"}
	if _, err := gitrepo.Open(ctx, tok); err != nil {
		t.Errorf("token: %v", err)
	}

	cases := []struct {
		name string
		opts func() gitrepo.Options
		want error
	}{
		{"wrong credentials", func() gitrepo.Options {
			o := good
			o.Auth.Password = "wrong"
			return o
		}, gitrepo.ErrAuthentication},
		{"no credentials", func() gitrepo.Options { o := good; o.Auth = gitrepo.Auth{}; return o }, gitrepo.ErrAuthentication},
		{"missing branch", func() gitrepo.Options { o := good; o.Branch = "production"; return o }, gitrepo.ErrBranchNotFound},
		{"no such repository", func() gitrepo.Options {
			o := good
			o.URL = strings.Replace(url, "/r.git", "/nope.git", 1)
			return o
		}, gitrepo.ErrRepositoryNotFound},
	}
	for _, tc := range cases {
		_, err := gitrepo.Open(ctx, tc.opts())
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "wrong") {
			t.Errorf("%s: the error quotes the password: %v", tc.name, err)
		}
	}

	// A server that answers with a corrupted pack: a clear error, nothing pushed.
	r, err := gitrepo.Open(ctx, good)
	if err != nil {
		t.Fatal(err)
	}
	s.corrupt.Store(true)
	o := good
	o.MaxAttempts = 2
	if _, err := gitrepo.Open(ctx, o); err == nil {
		t.Error("cloning from a corrupted server succeeded")
	}
	_, err = r.Apply(ctx, change("x", map[string]string{"a": "1"}))
	if err == nil {
		t.Error("pushing to a corrupted server succeeded")
	}
	s.corrupt.Store(false)
	if head() != before {
		t.Error("a failed scenario wrote to the remote")
	}
	if err := (&gitrepo.Options{URL: "", Author: gitrepo.Signature{}}).Validate(); err == nil ||
		!strings.Contains(err.Error(), "url: required") || !strings.Contains(err.Error(), "author") {
		t.Errorf("Validate: %v", err)
	}
	bad := good
	bad.Auth = gitrepo.Auth{SSHKeyFile: "/k"}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "known_hosts_file") {
		t.Errorf("ssh without known_hosts: %v", err)
	}
}
