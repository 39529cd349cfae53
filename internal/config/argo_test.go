package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestArgoRepoDefaults: the repository the Argo CD Applications with chart patches read
// (argo.repo_url, argo.target_revision) is git.url and git.branch unless the file says
// otherwise; a local path is no repository Argo CD fetches, so none is taken, and site
// post-renderers are then refused naming argo.repo_url.
func TestArgoRepoDefaults(t *testing.T) {
	t.Parallel()
	patches := "flux: {post_renderers: [{kustomize: {patches: [{target: {kind: Cluster}, patch: '[{op: remove, path: /spec/paused}]'}]}}]}\n"
	cases := []struct {
		name, file       string
		wantURL, wantRev string
		err              string
	}{
		{"from git", "format: argo\ngit: {url: https://git.example.org/c.git, branch: clusters}\n" + patches,
			"https://git.example.org/c.git", "clusters", ""},
		{"git's default branch", "format: argo\ngit: {url: 'git@git.example.org:cloud/c.git'}\n" + patches,
			"git@git.example.org:cloud/c.git", "main", ""},
		{"the file's own", "format: argo\nargo: {repo_url: 'ssh://git@git.internal/c.git', target_revision: prod}\ngit: {url: https://git.example.org/c.git}\n" + patches,
			"ssh://git@git.internal/c.git", "prod", ""},
		{"flux format too, for --format argo", "git: {url: https://git.example.org/c.git}\n",
			"https://git.example.org/c.git", "main", ""},
		{"a local path", "format: argo\ngit: {url: /srv/git/c.git}\n", "", "", ""},
		{"a local path with patches", "format: argo\ngit: {url: /srv/git/c.git}\n" + patches, "", "", "argo.repo_url"},
		{"no git", "format: argo\n" + patches, "", "", "argo.repo_url"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := filepath.Join(t.TempDir(), "c.yaml")
			if err := os.WriteFile(p, []byte(tc.file), 0o600); err != nil {
				t.Fatal(err)
			}
			c, err := Load(p)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), "flux.post_renderers") || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Load: %v, want flux.post_renderers refused naming %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Argo.RepoURL != tc.wantURL || c.Argo.TargetRevision != tc.wantRev {
				t.Errorf("argo.repo_url %q, argo.target_revision %q; want %q, %q", c.Argo.RepoURL, c.Argo.TargetRevision, tc.wantURL, tc.wantRev)
			}
		})
	}
}
