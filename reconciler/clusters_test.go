package reconciler_test

import (
	"slices"
	"testing"
	"time"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/reconciler"
)

// TestObserveSuperseded: in review mode a cluster's record keeps the pull requests of its
// earlier events that a later event replaced, so serve can close them however quickly the
// events came; a replay of the same event supersedes nothing; the list stays short.
func TestObserveSuperseded(t *testing.T) {
	t.Parallel()
	ev := func(id string) *v1alpha1.ClusterEvent {
		return &v1alpha1.ClusterEvent{ID: id, Operation: v1alpha1.UpdateCluster, Cluster: v1alpha1.Cluster{UUID: "u1"}}
	}
	pr := func(n string) string { return "https://gitea.example.org/ops/clusters/pulls/" + n }
	for _, tc := range []struct {
		name string
		seq  []struct{ id, pr string }
		want []string
	}{
		{"one event", []struct{ id, pr string }{{"e1", pr("1")}}, nil},
		{"a replay", []struct{ id, pr string }{{"e1", pr("1")}, {"e1", ""}}, nil},
		{"a newer event", []struct{ id, pr string }{{"e1", pr("1")}, {"e2", pr("2")}}, []string{pr("1")}},
		{"a newer event with no pull request", []struct{ id, pr string }{{"e1", pr("1")}, {"e2", ""}}, []string{pr("1")}},
		{"kept across events", []struct{ id, pr string }{{"e1", pr("1")}, {"e2", pr("2")}, {"e3", ""}, {"e4", pr("4")}}, []string{pr("1"), pr("2")}},
		{"the same pull request updated", []struct{ id, pr string }{{"e1", pr("1")}, {"e2", pr("1")}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := reconciler.NewClusters()
			for _, s := range tc.seq {
				c.Observe(ev(s.id), reconciler.Summary{StackID: "prod-a-x", Namespace: "ns", PullRequestURL: s.pr}, time.Now())
			}
			rec, _ := c.Get("u1")
			if !slices.Equal(rec.Superseded, tc.want) {
				t.Errorf("Superseded = %v, want %v", rec.Superseded, tc.want)
			}
		})
	}
	c := reconciler.NewClusters()
	for i := range 20 {
		c.Observe(ev(string(rune('a'+i))), reconciler.Summary{PullRequestURL: pr(string(rune('a' + i)))}, time.Now())
	}
	if rec, _ := c.Get("u1"); len(rec.Superseded) != 8 || rec.Superseded[7] != pr("s") {
		t.Errorf("after 20 events: %v, want the last 8", rec.Superseded)
	}
}
