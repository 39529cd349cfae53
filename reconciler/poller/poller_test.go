package poller_test

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/magnum-gitops/magnum-gitops/internal/testenv/magnumstandin"
	"github.com/magnum-gitops/magnum-gitops/magnum"
)

// TestPollerScriptedSequence drives a scripted sequence of Magnum states (create, node
// count change, node group add, template change, node group and cluster deletes) through
// the poller, a real reconciler.Reconciler and a real Git remote, and checks after every pass
// exactly which commits were made. Restarts in the middle (a new process that reads Git
// back) make no duplicate commit, and a process that dies in the middle of a pass loses
// nothing: the next one commits what is left, once.
//
// Keystone and Glance are real; Magnum, Neutron, Cinder and Nova are stand-ins built from
// their documented APIs and registered in Keystone's catalog (internal/testenv/magnumstandin),
// since they cannot run here. The events are resolved by the real openstack.Resolver and
// the created clusters get real Keystone application credentials.
func TestPollerScriptedSequence(t *testing.T) {
	f := newPollFixture(t)
	ngSeq := 0
	group := func(cluster, name, role string, count int) map[string]any {
		ngSeq++
		g := magnumstandin.NodeGroupDoc(cluster, fmt.Sprintf("20000000-0000-4000-8000-%012d", ngSeq), name, role, count)
		g["updated_at"] = f.tick()
		return g
	}
	addCluster := func(d *magnumstandin.Data, uuid, name, tmpl string, masters, workers int) {
		c := magnumstandin.ClusterDoc(uuid, name, f.project, ownerID, tmpl)
		c["updated_at"] = f.tick()
		d.Clusters = append(d.Clusters, c)
		d.NodeGroups[uuid] = []map[string]any{group(uuid, "default-master", "master", masters),
			group(uuid, "default-worker", "worker", workers)}
		d.SyncCounts(uuid)
	}
	// save stamps a changed cluster as Magnum's conductor does.
	save := func(d *magnumstandin.Data, uuid, status string) {
		c := d.Cluster(uuid)
		c["status"], c["updated_at"] = status, f.tick()
		d.SyncCounts(uuid)
	}
	dirA := path.Join("clusters/magnum", "magnum-"+f.project, magnum.GenerateReleaseName("prod-a", prodA))

	tests := []struct {
		name    string
		magnum  func(d *magnumstandin.Data) // Magnum's state before the pass (nil: unchanged)
		restart bool                        // a new process reads Git back before the pass
		// limited: the credentials may not see every project (no admin role).
		limited bool
		// crash: the process dies in the pass (fixture_test.go's crashPoint).
		crash crashPoint
		want  []string // operations of the new commits, in order
		// groupReads is how many node group lists the pass reads (-1: not checked).
		groupReads int
		check      func(t *testing.T)
	}{
		{name: "a cluster Magnum has just listed: left to the driver shim for the create grace",
			magnum: func(d *magnumstandin.Data) {
				addCluster(d, prodA, "prod-a", tmplV1, 3, 2)
				d.Cluster(prodA)["created_at"] = time.Now().UTC().Format("2006-01-02T15:04:05+00:00")
			},
			groupReads: 0},
		{name: "create: the selected clusters, in Magnum's order",
			magnum: func(d *magnumstandin.Data) {
				d.Cluster(prodA)["created_at"] = magnumstandin.Created // the shim never came
				addCluster(d, otherC, "other", tmplOther, 1, 1)
				addCluster(d, prodB, "prod-b", tmplV1, 1, 1)
			},
			want: []string{"create_cluster", "create_cluster"}, groupReads: 2,
			check: func(t *testing.T) {
				creds := f.decrypted(t, path.Join(dirA, "secret-cloud-credentials.sops.yaml"))
				if !strings.Contains(creds, "application_credential_id") || !strings.Contains(creds, f.ks.AuthURL) {
					t.Errorf("cloud credentials of prod-a:\n%s", creds)
				}
				if hr := f.show(t, path.Join(dirA, "helmrelease.yaml")); !strings.Contains(hr, "kubernetesVersion: 1.33.7") {
					t.Errorf("HelmRelease of prod-a:\n%s", hr)
				}
			}},
		{name: "nothing changed: no commit, node groups not read again", groupReads: 0},
		{name: "only Magnum's status moved: no commit",
			magnum: func(d *magnumstandin.Data) {
				save(d, prodA, "CREATE_COMPLETE")
				save(d, prodB, "CREATE_COMPLETE")
			},
			groupReads: 2},
		{name: "node count change: resize",
			magnum: func(d *magnumstandin.Data) {
				d.NodeGroup(prodA, "default-worker")["node_count"] = 4
				save(d, prodA, "UPDATE_IN_PROGRESS")
			},
			want: []string{"resize_cluster"}, groupReads: 1,
			check: func(t *testing.T) {
				if hr := f.show(t, path.Join(dirA, "helmrelease.yaml")); !strings.Contains(hr, "machineCount: 4") {
					t.Errorf("HelmRelease of prod-a after the resize:\n%s", hr)
				}
			}},
		{name: "node group added: create_nodegroup",
			magnum: func(d *magnumstandin.Data) {
				d.NodeGroups[prodA] = append(d.NodeGroups[prodA], group(prodA, "gpu", "worker", 1))
				save(d, prodA, "UPDATE_IN_PROGRESS")
			},
			want: []string{"create_nodegroup"}, groupReads: 1},
		{name: "restart: nothing new", restart: true, groupReads: 2},
		{name: "template change: upgrade",
			magnum: func(d *magnumstandin.Data) {
				d.Cluster(prodA)["cluster_template_id"] = tmplV2
				save(d, prodA, "UPDATE_IN_PROGRESS")
			},
			want: []string{"upgrade_cluster"}, groupReads: 1,
			check: func(t *testing.T) {
				if hr := f.show(t, path.Join(dirA, "helmrelease.yaml")); !strings.Contains(hr, "kubernetesVersion: 1.33.8") {
					t.Errorf("HelmRelease of prod-a after the upgrade:\n%s", hr)
				}
			}},
		{name: "three differences, the process dies before they reach Git",
			magnum: func(d *magnumstandin.Data) {
				gpu := d.NodeGroup(prodA, "gpu")
				gpu["node_count"], gpu["max_node_count"] = 2, 3
				d.Cluster(prodA)["labels"] = map[string]string{"monitoring_enabled": "true"}
				save(d, prodA, "UPDATE_IN_PROGRESS")
			},
			crash: crashBefore, groupReads: 1},
		{name: "restart: the three, in order, one commit each", restart: true,
			want: []string{"resize_cluster", "update_nodegroup", "update_cluster"}, groupReads: 2},
		{name: "a label changed, the process dies once it is pushed",
			magnum: func(d *magnumstandin.Data) {
				d.Cluster(prodA)["labels"] = map[string]string{"monitoring_enabled": "false"}
				save(d, prodA, "UPDATE_IN_PROGRESS")
			},
			crash: crashAfterPush, want: []string{"update_cluster"}, groupReads: 1},
		{name: "restart again: nothing twice", restart: true, groupReads: 2},
		{name: "node group being deleted: delete_nodegroup",
			magnum: func(d *magnumstandin.Data) {
				d.NodeGroup(prodA, "gpu")["status"] = "DELETE_IN_PROGRESS"
				save(d, prodA, "UPDATE_IN_PROGRESS")
			},
			want: []string{"delete_nodegroup"}, groupReads: 1},
		{name: "node group gone: Git already renders it deleted",
			magnum: func(d *magnumstandin.Data) {
				d.RemoveNodeGroup(prodA, "gpu")
				save(d, prodA, "UPDATE_COMPLETE")
			},
			groupReads: 1},
		{name: "cluster being deleted: delete_cluster",
			magnum: func(d *magnumstandin.Data) { save(d, prodA, "DELETE_IN_PROGRESS") },
			want:   []string{"delete_cluster"}, groupReads: 0,
			check: func(t *testing.T) {
				if hr := f.show(t, path.Join(dirA, "helmrelease.yaml")); hr != "" {
					t.Errorf("the deleted cluster's HelmRelease is still in Git:\n%s", hr)
				}
				if creds := f.show(t, path.Join(dirA, "secret-cloud-credentials.sops.yaml")); creds == "" {
					t.Error("the deleted cluster's credentials left Git before its CAPI Cluster is gone")
				}
			}},
		{name: "deleted cluster gone from Magnum: nothing",
			magnum: func(d *magnumstandin.Data) { d.RemoveCluster(prodA) }},
		{name: "a cluster missing from the list of credentials that may not see it all: kept",
			magnum:  func(d *magnumstandin.Data) { d.RemoveCluster(prodB) },
			limited: true, groupReads: 0},
		{name: "restart: a cluster deleted from Magnum while the service was down",
			restart: true, want: []string{"delete_cluster"}, groupReads: 0},
		{name: "restart: nothing", restart: true, groupReads: 0},
	}

	svc := f.start(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.magnum != nil {
				f.magnum.Update(tc.magnum)
			}
			if tc.restart {
				svc.stop()
				svc = f.start(t)
			}
			svc.poller.AllProjects = !tc.limited
			svc.crash = tc.crash
			before := f.commits(t)
			reads := groupLists(f.magnum.Log())
			err := svc.poller.Poll(t.Context())
			if (err != nil) != (tc.crash != noCrash) {
				t.Fatalf("Poll: %v (want an error only from the simulated crash)\n%s", err, f.logs.String())
			}
			after := f.commits(t)
			var got []string
			for _, c := range after[len(before):] {
				got = append(got, c.op)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("new commits %v, want %v", got, tc.want)
			}
			if n := groupLists(f.magnum.Log()) - reads; tc.groupReads >= 0 && n != tc.groupReads {
				t.Errorf("%d node group lists read, want %d", n, tc.groupReads)
			}
			if tc.check != nil {
				tc.check(t)
			}
		})
		if tc.crash != noCrash {
			// The crashed process is gone: the next pass runs in a new one.
			svc.stop()
			svc = f.start(t)
		}
	}

	t.Run("history", func(t *testing.T) {
		seen := map[string]bool{}
		for _, c := range f.commits(t) {
			if !strings.HasPrefix(c.id, "poll-") || seen[c.id] {
				t.Errorf("commit %s with event id %q: want a unique poll- id", c.op, c.id)
			}
			seen[c.id] = true
		}
		f.git.Fsck("clusters.git")
		messages := f.git.Git(f.git.Dir("clusters.git"), "log", "--format=%B")
		logs := f.logs.String()
		if len(f.secrets) != 2 {
			t.Errorf("%d application credentials made, want one per created cluster", len(f.secrets))
		}
		for _, s := range f.secrets {
			if s == "" || strings.Contains(messages, s) || strings.Contains(logs, s) {
				t.Error("an application credential secret is empty or appears in a commit message or the logs")
			}
		}
	})
}

// groupLists counts the node group list requests (GET /v1/clusters/{id}/nodegroups).
func groupLists(log []string) int {
	n := 0
	for _, r := range log {
		p, _, _ := strings.Cut(strings.TrimPrefix(r, "GET "), "?")
		if strings.HasPrefix(p, "/v1/clusters/") && strings.HasSuffix(p, "/nodegroups") {
			n++
		}
	}
	return n
}
