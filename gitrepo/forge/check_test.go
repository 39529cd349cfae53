package forge_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/gitrepo"
	"github.com/magnum-gitops/magnum-gitops/gitrepo/forge"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv/gitea"
)

// TestGiteaCheck: what serve asks of the forge before it starts in review mode, against a
// real Gitea: the bot's token on its repository passes; a token Gitea refuses, a repository
// that does not exist (or that the token may not see) and a token that may only read are
// each refused with their sentinel, the token never in the message.
func TestGiteaCheck(t *testing.T) {
	t.Parallel()
	srv := gitea.Start(t)
	r := srv.CreateRepo(t, "check")
	// The reviewer may only read from now on.
	if err := srv.Call(srv.Ops, "PUT", "/repos/"+r.Owner+"/"+r.Name+"/collaborators/"+srv.Reviewer.Name,
		map[string]string{"permission": "read"}, nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		repo  string
		token string
		want  error
	}{
		{"bot", r.Name, srv.Bot.Token, nil},
		{"wrong token", r.Name, "0123456789abcdef0123456789abcdef01234567", gitrepo.ErrAuthentication},
		{"no such repository", "nothing-here", srv.Bot.Token, gitrepo.ErrRepositoryNotFound},
		{"read only", r.Name, srv.Reviewer.Token, forge.ErrCannotPush},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &forge.Gitea{BaseURL: srv.URL, Owner: r.Owner, Repo: tc.repo, Token: tc.token}
			err := g.Check(context.Background())
			if !errors.Is(err, tc.want) || tc.want == nil && err != nil {
				t.Fatalf("Check = %v, want %v", err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), tc.token) {
				t.Errorf("the token is in the error: %v", err)
			}
		})
	}
}
