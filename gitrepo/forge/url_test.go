package forge

import (
	"errors"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/gitrepo"
)

func TestPullNumber(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url, kind string
		want      int // 0: refused with ErrNotPullRequestURL
	}{
		{"https://gitea.example.org/cloud/clusters/pulls/7", "pulls", 7},
		{"http://127.0.0.1:3000/cloud/clusters/pulls/12/", "pulls", 12},
		{"https://example.org/git/cloud/clusters/pulls/3", "pulls", 3}, // Gitea under a sub-path
		{"https://gitea.example.org/Cloud/Clusters/pulls/7", "pulls", 7},
		{"https://github.com/cloud/clusters/pull/42", "pull", 42},
		{"https://github.com/cloud/clusters/pull/42", "pulls", 0},
		{"https://gitea.example.org/cloud/other/pulls/7", "pulls", 0},
		{"https://gitea.example.org/someone/clusters/pulls/7", "pulls", 0},
		{"https://gitea.example.org/cloud/clusters/issues/7", "pulls", 0},
		{"https://gitea.example.org/cloud/clusters/pulls/0", "pulls", 0},
		{"https://gitea.example.org/cloud/clusters/pulls/x", "pulls", 0},
		{"https://gitea.example.org/clusters/pulls/7", "pulls", 0},
		{"ftp://gitea.example.org/cloud/clusters/pulls/7", "pulls", 0},
		{"cloud/clusters/pulls/7", "pulls", 0},
		{"", "pulls", 0},
	} {
		n, err := pullNumber(tc.url, "cloud", "clusters", tc.kind)
		if n != tc.want || (tc.want == 0) != errors.Is(err, gitrepo.ErrNotPullRequestURL) {
			t.Errorf("pullNumber(%q, %s) = %d, %v; want %d", tc.url, tc.kind, n, err, tc.want)
		}
	}
}
