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

// TestContainsMergedHistory: on a history with a merge (a hand-made side branch merged
// into main), commits on main's first-parent line, commits only reachable through the
// merge and heads off that line are all answered as the history says, whatever order
// they are asked in.
func TestContainsMergedHistory(t *testing.T) {
	t.Parallel()
	s := newGitServer(t)
	url := s.newRepo("merged", true)
	work := t.TempDir()
	git(t, "", "clone", "-q", s.dir("merged"), work)
	commit := func(msg string) string {
		git(t, work, "commit", "-q", "--allow-empty", "-m", msg)
		return strings.TrimSpace(git(t, work, "rev-parse", "HEAD"))
	}
	a := strings.TrimSpace(git(t, work, "rev-parse", "HEAD"))
	git(t, work, "checkout", "-q", "-b", "side")
	s1, s2 := commit("s1"), commit("s2")
	git(t, work, "checkout", "-q", "main")
	b := commit("b")
	git(t, work, "merge", "-q", "--no-ff", "-m", "m", "side")
	m := strings.TrimSpace(git(t, work, "rev-parse", "HEAD"))
	c := commit("c")
	git(t, work, "push", "-q", "origin", "main")
	r := open(t, testOptions(url))

	for _, tc := range []struct {
		name         string
		head, commit string
		want         bool
	}{
		{"first-parent line, before the index reaches the head", b, a, true},
		{"first-parent line, the index extended", c, b, true},
		{"through the merge", c, s1, true},
		{"the merge's second parent", m, s2, true},
		{"a later commit on the line", b, c, false},
		{"the line's commit from the side", s2, b, false},
		{"the fork point from the side", s2, a, true},
		{"side commits in order", s2, s1, true},
		{"side commits out of order", s1, s2, false},
		{"a side commit from before the merge", b, s1, false},
		{"the merge from its parent", s2, m, false},
		{"the line again, after the side", c, a, true},
	} {
		got, err := r.Contains(tc.head, tc.commit)
		if err != nil || got != tc.want {
			t.Errorf("%s: Contains = %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
}
