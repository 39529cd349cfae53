package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/gitrepo"
	"github.com/magnum-gitops/magnum-gitops/internal/config"
)

// TestGitHistory: git.history becomes the clone's gitrepo.History: the default when
// absent, as written when present (commits: 0 is the whole history), refused when
// negative, naming the section.
func TestGitHistory(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, section string
		want          gitrepo.History
		err           string
	}{
		{"absent", "", gitrepo.History{Commits: 1000, Since: 10 * time.Minute, MaxCommits: 20000}, ""},
		{"the whole history", "  history: {commits: 0}\n", gitrepo.History{}, ""},
		{"a count", "  history: {commits: 5000}\n", gitrepo.History{Commits: 5000}, ""},
		{"count and time", "  history: {commits: 100, since: 1h, max_commits: 800}\n", gitrepo.History{Commits: 100, Since: time.Hour, MaxCommits: 800}, ""},
		{"negative", "  history: {commits: -5}\n", gitrepo.History{}, "git.history: must not be negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(p, []byte("git:\n  url: https://git.example.org/clusters.git\n"+tc.section), 0o600); err != nil {
				t.Fatal(err)
			}
			f, err := config.Load(p)
			if err != nil {
				t.Fatal(err)
			}
			o, err := f.Git.Options(nil)
			if tc.err != "" {
				if !errors.Is(err, v1alpha1.ErrInvalidInput) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Options() = %v, want an error saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, o.History); diff != "" {
				t.Errorf("History (-want +got):\n%s", diff)
			}
		})
	}
}
