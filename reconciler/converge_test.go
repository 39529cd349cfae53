package reconciler_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/gitrepo"
	"github.com/magnum-gitops/magnum-gitops/reconciler"
)

// resolvedFrom stands in for the OpenStack resolver (Nova, Neutron and Glance's facts):
// it gives derived events, which carry none, the facts of a fixture event, and fails the
// operations fail names.
type resolvedFrom struct {
	facts v1alpha1.Resolved
	fail  map[v1alpha1.Operation]bool
}

func (r *resolvedFrom) Resolve(_ context.Context, ev *v1alpha1.ClusterEvent) error {
	if r.fail[ev.Operation] {
		return errors.New("compute: 503 Service Unavailable")
	}
	if ev.Resolved.Image == nil {
		ev.Resolved = r.facts
	}
	return nil
}

// TestConverge: Magnum's view of a cluster is a desired state; the reconcile derives what
// Git lacks of it, one commit per driver call, in order, and nothing when Git holds it.
func TestConverge(t *testing.T) {
	base := event(t, "01-prod-a-create.yaml")
	view := func(edit func(v *reconciler.MagnumView)) reconciler.MagnumView {
		ev := event(t, "01-prod-a-create.yaml")
		groups, _ := ev.EffectiveNodeGroups()
		v := reconciler.MagnumView{Cluster: ev.Cluster, Template: ev.ClusterTemplate, NodeGroups: groups, AuthURL: "https://keystone.example.org/v3"}
		if edit != nil {
			edit(&v)
		}
		return v
	}
	resized := func(v *reconciler.MagnumView) {
		for i := range v.NodeGroups {
			if !v.NodeGroups[i].IsMaster() {
				v.NodeGroups[i].NodeCount += 2
			}
		}
	}
	relabelled := func(v *reconciler.MagnumView) {
		resized(v)
		v.Cluster.Labels = v1alpha1.Labels{"monitoring_enabled": "true"}
	}
	p, sink, _ := committer(t)
	res := &resolvedFrom{facts: base.Resolved}
	p.Resolvers = []reconciler.Resolver{res}
	q := &reconciler.Reconciler{Pipeline: p, Sink: sink, Clusters: reconciler.NewClusters(), MaxWait: time.Millisecond}
	q.Start()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { q.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	tests := []struct {
		name  string
		views []reconciler.MagnumView
		fail  v1alpha1.Operation
		// want is each view's derived events, "operation outcome".
		want [][]string
		// commits are the operations of the new commits, in order.
		commits []string
	}{
		{name: "Git holds nothing: create_cluster",
			views: []reconciler.MagnumView{view(nil)}, want: [][]string{{"create_cluster committed"}},
			commits: []string{"create_cluster"}},
		{name: "Git holds the view: nothing, silently",
			views: []reconciler.MagnumView{view(nil)}, want: [][]string{nil}},
		{name: "Magnum's status moved alone: nothing",
			views: []reconciler.MagnumView{view(func(v *reconciler.MagnumView) { v.Cluster.Status = v1alpha1.CreateComplete })},
			want:  [][]string{nil}},
		{name: "two differences, the first fails to render: neither is committed",
			views: []reconciler.MagnumView{view(relabelled)}, fail: v1alpha1.ResizeCluster,
			want: [][]string{{"resize_cluster retry", "update_cluster retry"}}},
		{name: "the same view once the cloud answers: both, in order",
			views: []reconciler.MagnumView{view(relabelled)},
			want:  [][]string{{"resize_cluster committed", "update_cluster committed"}}, commits: []string{"resize_cluster", "update_cluster"}},
		{name: "a derived event the event API would refuse: refused, the other view committed",
			views: []reconciler.MagnumView{view(func(v *reconciler.MagnumView) {
				relabelled(v)
				v.Cluster.Labels["auto_healing_enabled"] = "false"
			}), view(func(v *reconciler.MagnumView) {
				v.Cluster.UUID, v.Cluster.Name = "5f0c8a4e-0d47-4b8e-9f43-7a1e2b3c4d5e", "bad\nname"
			})},
			want:    [][]string{{"update_cluster committed"}, {"create_cluster invalid"}},
			commits: []string{"update_cluster"}},
		{name: "Magnum no longer has it: delete_cluster",
			views: []reconciler.MagnumView{{Cluster: v1alpha1.Cluster{UUID: base.Cluster.UUID}, Gone: true}},
			want:  [][]string{{"delete_cluster committed"}}, commits: []string{"delete_cluster"}},
		{name: "gone again: nothing",
			views: []reconciler.MagnumView{{Cluster: v1alpha1.Cluster{UUID: base.Cluster.UUID}, Gone: true}},
			want:  [][]string{nil}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res.fail = map[v1alpha1.Operation]bool{tc.fail: true}
			before := commitOps(t, sink)
			out := q.Converge(context.Background(), tc.views)
			var got [][]string
			for _, sums := range out {
				var ops []string
				for _, s := range sums {
					ops = append(ops, string(s.Operation)+" "+s.Outcome)
					if s.Timings.Answer <= 0 {
						t.Errorf("%s: no time from its view to its answer (Timings.Answer), which serve's latency reads", s.Operation)
					}
					if s.EventID != "" && !strings.HasPrefix(s.EventID, "poll-"+s.ClusterUUID+"-"+string(s.Operation)+"-") {
						t.Errorf("event id %q: want poll-<cluster>-<operation>-<hash>", s.EventID)
					}
				}
				got = append(got, ops)
			}
			if !slices.EqualFunc(got, tc.want, slices.Equal) {
				t.Fatalf("derived %q, want %q", got, tc.want)
			}
			if after := commitOps(t, sink); !slices.Equal(after[len(before):], tc.commits) {
				t.Errorf("new commits %v, want %v", after[len(before):], tc.commits)
			}
		})
	}
}

// commitOps are the operations of the branch's commits, oldest first.
func commitOps(t *testing.T, sink *reconciler.GitSink) []string {
	t.Helper()
	var ops []string
	err := sink.Repo.Walk(context.Background(), func(c gitrepo.CommitInfo) error {
		if op, ok := c.Trailer("Magnum-Operation"); ok {
			ops = append(ops, op)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Reverse(ops)
	return ops
}
