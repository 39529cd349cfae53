package gitrepo_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/magnum-gitops/magnum-gitops/gitrepo"
)

// TestOpenHistorySince: a clone bounded by time as well as count takes more commits while
// the oldest it holds is younger than History.Since, up to History.MaxCommits; a commit
// older than Since ends it.
func TestOpenHistorySince(t *testing.T) {
	t.Parallel()
	s := newGitServer(t)
	url := s.newRepo("since", true)
	work := t.TempDir()
	git(t, "", "clone", "-q", s.dir("since"), work)
	// 60 commits: the first 20 a day old, the last 40 from now.
	for i := range 60 {
		os.WriteFile(filepath.Join(work, "f"), []byte{byte(i)}, 0o644)
		git(t, work, "add", "f")
		cmd := exec.Command("git", "commit", "-q", "-m", "c")
		cmd.Dir, cmd.Env = work, append(os.Environ(), "GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@example.org",
			"GIT_COMMITTER_NAME=T", "GIT_COMMITTER_EMAIL=t@example.org")
		if i < 20 {
			cmd.Env = append(cmd.Env, "GIT_COMMITTER_DATE="+time.Now().Add(-24*time.Hour).Format(time.RFC3339))
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
	}
	git(t, work, "push", "-q", "origin", "HEAD:main")
	tests := []struct {
		name    string
		history gitrepo.History
		want    int
	}{
		{"count only", gitrepo.History{Commits: 3}, 3},
		{"young commits: more, up to the cap", gitrepo.History{Commits: 3, Since: time.Hour, MaxCommits: 30}, 30},
		{"a commit older than since ends it", gitrepo.History{Commits: 3, Since: time.Hour, MaxCommits: 1000}, 48},
		{"the whole history", gitrepo.History{Commits: 3, Since: 48 * time.Hour, MaxCommits: 1000}, 61},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := testOptions(url)
			o.History = tt.history
			o.Now = time.Now // the commits' times are the clock's
			r := open(t, o)
			n := 0
			if err := r.Walk(context.Background(), func(gitrepo.CommitInfo) error { n++; return nil }); err != nil {
				t.Fatal(err)
			}
			if n != tt.want {
				t.Errorf("%d commits held, want %d", n, tt.want)
			}
		})
	}
}
