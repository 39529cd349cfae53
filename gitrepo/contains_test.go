package gitrepo_test

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestContains: a commit is contained in itself and in every later head (walked, or past
// the clock skew), not in an earlier one; an unknown or malformed id is simply not
// contained.
func TestContains(t *testing.T) {
	t.Parallel()
	s := newGitServer(t)
	o := testOptions(s.newRepo("contains", true))
	// Commits a second apart, the last an hour after the others (past the clock skew).
	clock := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	o.Now = func() time.Time { clock = clock.Add(time.Second); return clock }
	r := open(t, o)
	ctx := context.Background()
	var commits []string
	for _, v := range []string{"1", "2", "3", "4"} {
		if v == "4" {
			clock = clock.Add(time.Hour)
		}
		if _, err := r.Apply(ctx, change("v"+v, map[string]string{"a.yaml": v})); err != nil {
			t.Fatal(err)
		}
		head, err := r.Head()
		if err != nil {
			t.Fatal(err)
		}
		commits = append(commits, head.String())
	}
	unknown := strings.Repeat("ab", 20)
	for _, tc := range []struct {
		name         string
		head, commit string
		want         bool
	}{
		{"itself", commits[1], commits[1], true},
		{"parent", commits[2], commits[1], true},
		{"grandparent", commits[2], commits[0], true},
		{"later commit", commits[0], commits[2], false},
		{"an hour later", commits[3], commits[0], true},
		{"an hour earlier", commits[0], commits[3], false},
		{"unknown head", unknown, commits[0], false},
		{"unknown commit", commits[2], unknown, false},
		{"not an id", "main@sha1:" + commits[2], commits[2], false},
	} {
		got, err := r.Contains(tc.head, tc.commit)
		if err != nil || got != tc.want {
			t.Errorf("%s: Contains = %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
}
