package magnumdiff

import (
	"testing"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
)

func TestEventIDIsDerivedFromTheState(t *testing.T) {
	ev := &v1alpha1.ClusterEvent{Operation: v1alpha1.ResizeCluster, Cluster: magnumView().Cluster}
	id := EventID(ev)
	withSecrets := *ev
	withSecrets.Secrets = &v1alpha1.SecretMaterial{ApplicationCredential: &v1alpha1.ApplicationCredential{ID: "x", Secret: "s"}}
	changed := *ev
	changed.Cluster.NodeCount = ptrTo(7)
	switch {
	case len(id) != len("poll-")+36+len("-resize_cluster-")+12:
		t.Errorf("id %q", id)
	case EventID(&withSecrets) != id:
		t.Error("Secret material changed the id")
	case EventID(&changed) == id:
		t.Error("a different state got the same id")
	}
}

// TestEvent: what a derived event takes from the record Git holds, and what it leaves to
// the resolvers.
func TestEvent(t *testing.T) {
	t.Parallel()
	rec := recorded(magnumView(), v1alpha1.CreateCluster)
	rec.Context.AuthURL = "https://keystone.example.org/v3"
	rec.Resolved = v1alpha1.Resolved{RegionName: "RegionOne"}
	resize := Step{Op: v1alpha1.ResizeCluster, NodeGroup: "default-worker", State: magnumView()}
	tests := []struct {
		name       string
		rec        *v1alpha1.ClusterEvent
		st         Step
		wantAuth   string
		wantRegion string
		wantStatus v1alpha1.ClusterStatus
	}{
		{name: "no record: the poller's identity endpoint, nothing resolved",
			st: Step{Op: v1alpha1.CreateCluster, State: magnumView()}, wantAuth: "https://poller.example.org/v3",
			wantStatus: v1alpha1.CreateComplete},
		{name: "a record: its identity endpoint; the facts are looked up again",
			rec: rec, st: resize, wantAuth: "https://keystone.example.org/v3", wantStatus: v1alpha1.CreateComplete},
		{name: "gone from Magnum: the record's state, deleting, its facts kept",
			rec: rec, st: Gone(rec), wantAuth: "https://keystone.example.org/v3", wantRegion: "RegionOne",
			wantStatus: v1alpha1.DeleteInProgress},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev := Event(tc.rec, tc.st, "https://poller.example.org/v3")
			switch {
			case ev.Operation != tc.st.Op || ev.NodeGroup != tc.st.NodeGroup:
				t.Errorf("operation %s:%s, want %s:%s", ev.Operation, ev.NodeGroup, tc.st.Op, tc.st.NodeGroup)
			case ev.Context.AuthURL != tc.wantAuth:
				t.Errorf("auth_url %q, want %q", ev.Context.AuthURL, tc.wantAuth)
			case ev.Resolved.RegionName != tc.wantRegion:
				t.Errorf("resolved region %q, want %q", ev.Resolved.RegionName, tc.wantRegion)
			case ev.Cluster.Status != tc.wantStatus:
				t.Errorf("status %s, want %s", ev.Cluster.Status, tc.wantStatus)
			case ev.Magnum == nil || ev.Magnum.Driver != Driver || ev.ID != EventID(ev):
				t.Errorf("origin %+v, id %q: want the poller's, and the id of the state", ev.Magnum, ev.ID)
			}
		})
	}
}
