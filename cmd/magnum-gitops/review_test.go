package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/internal/gitserver"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv/gitea"
)

// TestServeReviewForgeRefused: serve in review mode reads its forge before it starts, and a
// token Gitea refuses, a repository it does not show or a token that may only read is bad
// configuration: exit 2 naming git.review.gitea, the token never in the message, nothing
// pushed. The forge is a real Gitea.
func TestServeReviewForgeRefused(t *testing.T) {
	srv := gitea.Start(t)
	r := srv.CreateRepo(t, "clusters")
	if err := srv.Call(srv.Ops, "PUT", "/repos/"+r.Owner+"/"+r.Name+"/collaborators/"+srv.Reviewer.Name,
		map[string]string{"permission": "read"}, nil); err != nil {
		t.Fatal(err)
	}
	git := gitserver.Start(t)
	url := git.Init("clusters.git")
	for _, tc := range []struct {
		name, repo, token, want string
	}{
		{"wrong token", r.Name, "0123456789abcdef0123456789abcdef01234567", "authentication"},
		{"no such repository", "nothing-here", srv.Bot.Token, "repository not found"},
		{"read only", r.Name, srv.Reviewer.Token, "may not push"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			config := serveConfig(t, dir, url, "api-token")
			forgeToken := filepath.Join(dir, "forge-token")
			if err := os.WriteFile(forgeToken, []byte(tc.token+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			// Under git:, which serveConfig writes first.
			cfg, err := os.ReadFile(config)
			if err != nil {
				t.Fatal(err)
			}
			review := fmt.Sprintf("  review:\n    branch_template: \"magnum/{{.StackID}}/{{.EventID}}\"\n    gitea: {url: %s, owner: %s, repo: %s, token_file: %s}\n",
				srv.URL, r.Owner, tc.repo, forgeToken)
			cfg = []byte(strings.Replace(string(cfg), "serve:\n", review+"serve:\n", 1))
			if err := os.WriteFile(config, cfg, 0o600); err != nil {
				t.Fatal(err)
			}
			_, _, err = run(t, "", "serve", "--config", config, "--listen", "127.0.0.1:0")
			if err == nil || exitCode(io.Discard, err) != 2 || !strings.Contains(err.Error(), "git.review.gitea") ||
				!strings.Contains(err.Error(), tc.want) {
				t.Fatalf("serve: %v (exit %d), want exit 2 naming git.review.gitea and %q", err, exitCode(io.Discard, err), tc.want)
			}
			if strings.Contains(err.Error(), tc.token) {
				t.Errorf("the token is in the error: %v", err)
			}
			if refs := strings.TrimSpace(git.Git(git.Dir("clusters.git"), "for-each-ref")); refs != "" {
				t.Errorf("refs pushed: %s", refs)
			}
		})
	}
}
