package gitrepo_test

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// TestChangedAndSameEntries: what a commit changed under a directory against its first
// parent, and whether another commit holds those entries as it left them — a change pushed
// to a review branch and the same content squashed onto main by another commit, with
// another message; not before the merge; a removal where the file is absent from both.
func TestChangedAndSameEntries(t *testing.T) {
	t.Parallel()
	s := newGitServer(t)
	r := open(t, testOptions(s.newRepo("carries", true)))
	ctx := context.Background()
	commit := func(subject, branch string, files map[string]string) string {
		t.Helper()
		c := change(subject, files)
		c.Branch = branch
		res, err := r.Apply(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		return res.Commit.String()
	}
	base := commit("base", "", map[string]string{"p1/a/hr.yaml": "v1", "p1/a/secret.yaml": "s", "p1/b/hr.yaml": "v1"})
	pushed := commit("resize a", "magnum/a/2", map[string]string{"p1/a/hr.yaml": "v2", "p1/a/record.yaml": "event 2", "p1/a/secret.yaml": "<delete>"})
	squashed := commit("Resize a (#7)", "", map[string]string{"p1/a/hr.yaml": "v2", "p1/a/record.yaml": "event 2", "p1/a/secret.yaml": "<delete>", "p1/b/hr.yaml": "v2"})
	unknown := strings.Repeat("ab", 20)

	changed, err := r.ChangedUnder(pushed, "p1/a")
	slices.Sort(changed)
	if want := []string{"p1/a/hr.yaml", "p1/a/record.yaml", "p1/a/secret.yaml"}; err != nil || !slices.Equal(changed, want) {
		t.Errorf("ChangedUnder(pushed, p1/a) = %v, %v; want %v", changed, err, want)
	}
	if changed, err := r.ChangedUnder(pushed, "p1/b"); err != nil || changed == nil || len(changed) != 0 {
		t.Errorf("ChangedUnder(pushed, p1/b) = %#v, %v; want none (not nil)", changed, err)
	}
	if changed, err := r.ChangedUnder(unknown, "p1/a"); err != nil || changed != nil {
		t.Errorf("ChangedUnder(unknown) = %#v, %v; want nil", changed, err)
	}
	all := []string{"p1/a/hr.yaml", "p1/a/record.yaml", "p1/a/secret.yaml"}
	for _, tc := range []struct {
		name  string
		a, b  string
		paths []string
		want  bool
	}{
		{"squashed", squashed, pushed, all, true},
		{"squashed directory", squashed, pushed, []string{"p1/a"}, true},
		{"before the merge", base, pushed, all, false},
		{"the removal alone, before", base, pushed, []string{"p1/a/secret.yaml"}, false},
		{"absent from both", base, pushed, []string{"p2/c"}, true},
		{"another cluster moved", squashed, pushed, []string{"p1/b"}, false},
		{"unknown commit", unknown, pushed, all, false},
		{"not an id", "main@sha1:" + squashed, pushed, all, false},
	} {
		got, err := r.SameEntries(tc.a, tc.b, tc.paths...)
		if err != nil || got != tc.want {
			t.Errorf("%s: SameEntries = %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
}
