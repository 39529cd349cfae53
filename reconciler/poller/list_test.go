package poller_test

import (
	"encoding/json"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv/magnumstandin"
	"github.com/magnum-gitops/magnum-gitops/reconciler/openstack"
	"github.com/magnum-gitops/magnum-gitops/reconciler/poller"
)

// TestPollerList: List reads the clusters of the selected templates as Magnum holds them,
// one update_cluster event each with its node groups, leaves out the unselected and those
// being deleted, and neither submits nor reads Git.
func TestPollerList(t *testing.T) {
	f := newPollFixture(t)
	const deleted = "3e9b7c52-1d4a-4f8e-9b6c-2a7d5e8f1c06"
	f.magnum.Update(func(d *magnumstandin.Data) {
		for _, c := range []struct{ uuid, name, tmpl, status string }{
			{prodA, "prod-a", tmplV1, "CREATE_COMPLETE"},
			{prodB, "prod-b", tmplV2, "UPDATE_IN_PROGRESS"},
			{otherC, "heat-c", tmplOther, "CREATE_COMPLETE"},
			{deleted, "gone-d", tmplV1, "DELETE_IN_PROGRESS"},
		} {
			doc := magnumstandin.ClusterDoc(c.uuid, c.name, f.project, ownerID, c.tmpl)
			doc["status"] = c.status
			d.Clusters = append(d.Clusters, doc)
			d.NodeGroups[c.uuid] = []map[string]any{
				magnumstandin.NodeGroupDoc(c.uuid, c.uuid[:8]+"-0000-4000-8000-000000000001", "default-master", "master", 1),
				magnumstandin.NodeGroupDoc(c.uuid, c.uuid[:8]+"-0000-4000-8000-000000000002", "default-worker", "worker", 2),
				magnumstandin.NodeGroupDoc(c.uuid, c.uuid[:8]+"-0000-4000-8000-000000000003", "gpu", "worker", 3),
			}
			d.SyncCounts(c.uuid)
		}
	})
	client, err := openstack.NewMagnum(f.cloud)
	if err != nil {
		t.Fatal(err)
	}
	sel, err := poller.SelectTemplates("gitops=true", "")
	if err != nil {
		t.Fatal(err)
	}
	p := &poller.Poller{Magnum: client, Select: sel, AuthURL: f.ks.AuthURL, PageSize: 1}
	got, err := p.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		name     string
		status   v1alpha1.ClusterStatus
		template string
	}{
		prodA: {"prod-a", v1alpha1.CreateComplete, tmplV1},
		prodB: {"prod-b", v1alpha1.UpdateInProgress, tmplV2},
	}
	if len(got) != len(want) {
		t.Fatalf("listed %d clusters, want %d (prod-a, prod-b): %+v", len(got), len(want), got)
	}
	for _, mc := range got {
		w, ok := want[mc.UUID]
		switch {
		case !ok:
			t.Errorf("listed %s (%s): not selected, or being deleted", mc.Name, mc.UUID)
			continue
		case mc.Err != nil:
			t.Errorf("%s: %v", mc.Name, mc.Err)
			continue
		case mc.Name != w.name || mc.Status != w.status:
			t.Errorf("%s: listed as %s %s, want %s %s", mc.UUID, mc.Name, mc.Status, w.name, w.status)
		}
		ev := mc.Event
		if ev.Operation != v1alpha1.UpdateCluster || ev.Cluster.UUID != mc.UUID || ev.ClusterTemplate.UUID != w.template ||
			ev.Context.ProjectID != f.project || ev.Context.AuthURL != f.ks.AuthURL {
			t.Errorf("%s: event %s of cluster %s, template %s, project %s, auth_url %s", mc.Name, ev.Operation,
				ev.Cluster.UUID, ev.ClusterTemplate.UUID, ev.Context.ProjectID, ev.Context.AuthURL)
		}
		var names []string
		for _, g := range ev.NodeGroups {
			names = append(names, g.Name)
		}
		if len(names) != 3 || names[2] != "gpu" || ev.NodeGroups[2].NodeCount != 3 {
			t.Errorf("%s: node groups %v, want default-master, default-worker and gpu (3 nodes)", mc.Name, names)
		}
		if ev.Secrets != nil || ev.Resolved.Image != nil || len(ev.Resolved.Flavors) > 0 {
			t.Errorf("%s: the event carries secrets or resolved facts: List reads Magnum alone", mc.Name)
		}
		if b, err := json.Marshal(ev); err != nil {
			t.Errorf("%s: the event does not encode: %v", mc.Name, err)
		} else if _, err := v1alpha1.DecodeEvent(b); err != nil {
			t.Errorf("%s: the event API would refuse the event: %v", mc.Name, err)
		}
	}
	if n := len(f.git.Git(f.git.Dir("clusters.git"), "rev-list", "--all")); n != 0 {
		t.Errorf("List wrote to git")
	}
}
