package reconciler

import (
	"testing"
	"time"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
)

// TestReplaceKeepsTombstone: a record read from a snapshot taken before a cluster's delete
// completed does not bring the forgotten cluster back; a newer record of a live cluster
// still replaces the old one.
func TestReplaceKeepsTombstone(t *testing.T) {
	t.Parallel()
	now := time.Now()
	ev := &v1alpha1.ClusterEvent{ID: "e1", Operation: v1alpha1.CreateCluster}
	ev.Cluster.UUID = "u1"
	c := NewClusters()
	c.Observe(ev, Summary{StackID: "s1"}, now)
	c.Forget("u1", now)
	stale := &ClusterRecord{Event: ev, StackID: "s1", At: now}
	c.replace("u1", nil, stale, now)
	if _, ok := c.Get("u1"); ok {
		t.Fatal("a record read before the delete completed brought the cluster back")
	}
	if _, ok := c.Gone("u1"); !ok {
		t.Fatal("the tombstone is gone")
	}

	live := &v1alpha1.ClusterEvent{ID: "e2", Operation: v1alpha1.CreateCluster}
	live.Cluster.UUID = "u2"
	c.Observe(live, Summary{StackID: "s2"}, now)
	cur, _ := c.Get("u2")
	newer := &ClusterRecord{Event: &v1alpha1.ClusterEvent{ID: "e3"}, StackID: "s2", At: now}
	c.replace("u2", cur.Event, newer, now)
	if got, _ := c.Get("u2"); got.Event.ID != "e3" {
		t.Fatalf("u2 holds event %q, want e3", got.Event.ID)
	}
}
