package gitrepo_test

import (
	"strings"
	"testing"
	"time"

	"github.com/magnum-gitops/magnum-gitops/gitrepo"
)

// TestOptionsHistory: a History bound is counts and a duration, none negative, and a time
// bound needs a count to start from.
func TestOptionsHistory(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		history gitrepo.History
		err     string
	}{
		{gitrepo.History{}, ""},
		{gitrepo.History{Commits: 1000}, ""},
		{gitrepo.History{Commits: 1000, Since: time.Hour, MaxCommits: 20000}, ""},
		{gitrepo.History{Commits: -1}, "history: must not be negative"},
		{gitrepo.History{Commits: 10, Since: -time.Second}, "history: must not be negative"},
		{gitrepo.History{Since: time.Hour, MaxCommits: 10}, "history: since and max_commits need commits"},
	} {
		o := testOptions("https://git.example.org/r.git")
		o.History = tc.history
		err := o.Validate()
		if (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("History %+v: Validate() = %v, want %q", tc.history, err, tc.err)
		}
	}
}
