package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/internal/gitserver"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv/gitea"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv/keystone"
)

// TestCheck: `check` against real remotes: a Git server, Keystone, an API server that
// serves Flux's CRDs and Gitea. Every one reached is a ✔ line and exit 0; each one broken
// in turn (a repository that does not exist, a wrong OpenStack password, an API server
// that does not answer, a forge token Gitea refuses) is its own ✗ line naming the error,
// the others still ✔, and exit 1; a configuration with a misspelt key is exit 2 before
// anything is reached. No secret value is printed (run scans the output).
func TestCheck(t *testing.T) {
	testenv.Require(t, env)
	ks := keystone.Start(t)
	projectID, projectName := ks.CreateProject(t)
	user := ks.CreateUser(t, projectID, "member")
	srv := gitea.Start(t)
	forgeRepo := srv.CreateRepo(t, "clusters")
	git := gitserver.Start(t)
	url := git.Init("clusters.git")
	dir := t.TempDir()
	write := func(name, content string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	kc, err := env.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := write("kubeconfig", string(kc))
	deadKubeconfig := write("dead-kubeconfig", strings.Replace(string(kc), "server: https://127.0.0.1:", "server: https://127.0.0.2:", 1))
	clouds := func(password string) string {
		return write("clouds-"+password[:4]+".yaml", fmt.Sprintf(`clouds:
  test:
    auth: {auth_url: %q, username: %q, password: %q, user_domain_id: %q, project_name: %q, project_domain_id: %q}
    identity_api_version: 3
`, ks.AuthURL, user.Name, password, user.DomainID, projectName, user.DomainID))
	}
	good, wrong := clouds(user.Password), clouds("wrong-password-0123")
	token, badToken := write("forge-token", forgeRepo.Bot.Token+"\n"), write("bad-forge-token", "0123456789abcdef0123456789abcdef01234567\n")
	config := func(name, repoURL, cloudsFile, forgeToken string) string {
		return write(name, fmt.Sprintf(`git:
  url: %s
  review:
    branch_template: "magnum/{{.StackID}}/{{.EventID}}"
    gitea: {url: %s, owner: %s, repo: %s, token_file: %s}
openstack: {cloud: test, clouds_file: %s}
`, repoURL, srv.URL, forgeRepo.Owner, forgeRepo.Name, forgeToken, cloudsFile))
	}
	for _, tc := range []struct {
		name, config, kubeconfig string
		failed                   []string // the checks that must fail
	}{
		{"every remote answers", config("ok.yaml", url, good, token), kubeconfig, nil},
		{"no such repository", config("repo.yaml", strings.Replace(url, "clusters.git", "nothing.git", 1), good, token), kubeconfig, []string{"git "}},
		{"a wrong OpenStack password", config("os.yaml", url, wrong, token), kubeconfig, []string{"keystone"}},
		{"an API server that does not answer", config("kube.yaml", url, good, token), deadKubeconfig, []string{"management cluster"}},
		{"a token the forge refuses", config("forge.yaml", url, good, badToken), kubeconfig, []string{"forge"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _, err := run(t, "", "check", "--config", tc.config, "--kubeconfig", tc.kubeconfig)
			t.Logf("magnum-gitops check:\n%s", out)
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if len(lines) != 4 {
				t.Fatalf("%d lines, want 4 (git, keystone, management cluster, forge):\n%s", len(lines), out)
			}
			for _, l := range lines {
				want := "✔ "
				for _, f := range tc.failed {
					if strings.HasPrefix(l[len("✔ "):], f) {
						want = "✗ "
					}
				}
				if !strings.HasPrefix(l, want) {
					t.Errorf("line %q, want it to start %q", l, want)
				}
			}
			switch {
			case len(tc.failed) == 0 && err != nil:
				t.Errorf("check: %v\n%s", err, out)
			case len(tc.failed) > 0 && (!errors.Is(err, errChecksFailed) || exitCode(io.Discard, err) != 1):
				t.Errorf("check: %v (exit %d), want exit 1\n%s", err, exitCode(io.Discard, err), out)
			}
		})
	}
	t.Run("a misspelt key", func(t *testing.T) {
		_, _, err := run(t, "", "check", "--config", write("bad.yaml", "git: {ulr: "+url+"}\n"))
		if exitCode(io.Discard, err) != 2 || !strings.Contains(fmt.Sprint(err), "ulr") {
			t.Errorf("check: %v, want exit 2 naming the key", err)
		}
	})
}
