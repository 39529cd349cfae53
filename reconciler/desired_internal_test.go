package reconciler

import (
	"context"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
)

func op(uuid, id string) *operation {
	ev := &v1alpha1.ClusterEvent{ID: id}
	ev.Cluster.UUID = uuid
	return &operation{ctx: context.Background(), ev: ev, answer: make(chan Summary, 1)}
}

func ids(ops []*operation) []string {
	out := []string{}
	for _, o := range ops {
		out = append(out, o.ev.ID)
	}
	return out
}

// TestDesired: a cluster is queued once however many operations it has waiting, a group is
// bounded by operations (one cluster at least), a reconcile claims a cluster's operations
// in arrival order, and an operation that arrives once they were claimed queues the
// cluster again.
func TestDesired(t *testing.T) {
	type step struct {
		put     []*operation
		requeue []string
		take    int      // max operations; 0: no take
		taken   []string // clusters taken
		claim   string
		ops     []string // operations claimed
	}
	tests := []struct {
		name  string
		steps []step
		left  []string // operations close returns
	}{{
		name: "a cluster queued once, its operations in order",
		steps: []step{
			{put: []*operation{op("a", "a1"), op("b", "b1"), op("a", "a2")}, take: 10, taken: []string{"a", "b"}},
			{claim: "a", ops: []string{"a1", "a2"}},
			{claim: "b", ops: []string{"b1"}},
		},
	}, {
		name: "a group bounded by operations, one cluster at least",
		steps: []step{
			{put: []*operation{op("a", "a1"), op("a", "a2"), op("a", "a3"), op("b", "b1"), op("c", "c1")}, take: 2, taken: []string{"a"}},
			{take: 2, taken: []string{"b", "c"}},
			{take: 2, taken: []string{}},
		},
		left: []string{"a1", "a2", "a3", "b1", "c1"},
	}, {
		name: "taken, not claimed yet: the reconcile claims what arrives meanwhile",
		steps: []step{
			{put: []*operation{op("a", "a1")}, take: 10, taken: []string{"a"}},
			{put: []*operation{op("a", "a2")}, take: 10, taken: []string{}},
			{claim: "a", ops: []string{"a1", "a2"}},
		},
	}, {
		name: "claimed: what arrives next queues the cluster again",
		steps: []step{
			{put: []*operation{op("a", "a1")}, take: 10, taken: []string{"a"}, claim: "a", ops: []string{"a1"}},
			{put: []*operation{op("a", "a2")}, take: 10, taken: []string{"a"}, claim: "a", ops: []string{"a2"}},
		},
	}, {
		name: "requeued: queued once, counted as one, claimed with what arrives meanwhile",
		steps: []step{
			{requeue: []string{"a", "b", "c"}, put: []*operation{op("b", "b1")}, take: 2, taken: []string{"a", "b"}},
			{requeue: []string{"a", "c"}, take: 10, taken: []string{"c"}},
			{claim: "b", ops: []string{"b1"}},
			{claim: "a", ops: []string{}},
		},
	}, {
		name: "close returns what waits",
		steps: []step{
			{put: []*operation{op("a", "a1"), op("b", "b1")}, take: 1, taken: []string{"a"}},
		},
		left: []string{"a1", "b1"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDesired()
			for i, s := range tt.steps {
				d.requeue(s.requeue...)
				for _, o := range s.put {
					if !d.put(o) {
						t.Fatalf("step %d: put %s refused", i, o.ev.ID)
					}
				}
				if s.take > 0 {
					if diff := cmp.Diff(s.taken, append([]string{}, d.take(s.take)...)); diff != "" {
						t.Errorf("step %d: take(%d) (-want +got):\n%s", i, s.take, diff)
					}
				}
				if s.claim != "" {
					if diff := cmp.Diff(s.ops, ids(d.claim(s.claim))); diff != "" {
						t.Errorf("step %d: claim(%s) (-want +got):\n%s", i, s.claim, diff)
					}
				}
			}
			left := ids(d.close())
			slices.Sort(left)
			if diff := cmp.Diff(append([]string{}, tt.left...), left); diff != "" {
				t.Errorf("close (-want +got):\n%s", diff)
			}
			if d.put(op("z", "z1")) {
				t.Error("put after close was taken")
			}
		})
	}
}
