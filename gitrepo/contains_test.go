package gitrepo_test

import (
	"context"
	"strings"
	"testing"
)

// TestContains: a commit is contained in itself and in every later head, not in an
// earlier one; an unknown or malformed id is simply not contained.
func TestContains(t *testing.T) {
	t.Parallel()
	s := newGitServer(t)
	r := open(t, testOptions(s.newRepo("contains", true)))
	ctx := context.Background()
	var commits []string
	for _, v := range []string{"1", "2", "3"} {
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
