package poller_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/internal/leakcheck"
	"github.com/magnum-gitops/magnum-gitops/reconciler"
	"github.com/magnum-gitops/magnum-gitops/reconciler/openstack"
	"github.com/magnum-gitops/magnum-gitops/reconciler/poller"
)

// graceMagnum is a Magnum API in memory: one selected template and the clusters a test
// puts in it. The HTTP stand-in of TestPollerScriptedSequence needs a real Keystone; the
// grace depends on nothing but the listed cluster and the clock.
type graceMagnum struct {
	mu       sync.Mutex
	clusters []openstack.Cluster
	groups   map[string][]openstack.NodeGroup
}

var graceTemplate = openstack.ClusterTemplate{UUID: "6c4f1e0a-8b7d-4c2e-9f3a-1b2c3d4e5f60", Name: "k8s-1.33.7",
	ImageID: "1d2c3b4a-5e6f-4a7b-8c9d-0e1f2a3b4c5d", ExternalNetworkID: "public", NetworkDriver: "calico",
	FlavorID: "m1.medium", MasterFlavorID: "m1.large", COE: "kubernetes", Labels: map[string]string{"gitops": "true"}}

func (m *graceMagnum) ListClusters(context.Context, int) ([]openstack.Cluster, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.clusters), nil
}

func (m *graceMagnum) GetCluster(context.Context, string) (*openstack.Cluster, error) {
	return nil, errors.New("graceMagnum: GetCluster is not expected: every cluster is listed")
}

func (m *graceMagnum) ListClusterTemplates(context.Context, int) ([]openstack.ClusterTemplate, error) {
	return []openstack.ClusterTemplate{graceTemplate}, nil
}

func (m *graceMagnum) GetClusterTemplate(context.Context, string) (*openstack.ClusterTemplate, error) {
	return nil, errors.New("graceMagnum: GetClusterTemplate is not expected: the template is listed")
}

func (m *graceMagnum) ListNodeGroups(_ context.Context, id string) ([]openstack.NodeGroup, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.groups[id]), nil
}

// TestPollerCreateGrace: a cluster Git does not hold, which Magnum shows
// CREATE_IN_PROGRESS and created less than CreateGrace ago, is left for the driver shim's
// create_cluster (no view handed over, no application credential); after the grace the
// poller hands its view over, with the credential its create carries, as the safety net. Clusters Git holds, and clusters in any other status or
// without created_at, are not waited for; a negative grace waits for nothing.
func TestPollerCreateGrace(t *testing.T) {
	t.Parallel()
	const uuid = "3e9b7c52-1d4a-4f8e-9b6c-2a7d5e8f1c03"
	created := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	type pass struct {
		age   time.Duration // the clock, past created_at
		want  string        // what the pass hands over: "", "view" or "view+credential"
		creds int           // application credentials made, in total so far
	}
	tests := []struct {
		name      string
		status    string
		noCreated bool          // Magnum shows no created_at
		grace     time.Duration // Poller.CreateGrace
		inGit     bool          // Git holds the cluster's create with one worker less
		passes    []pass
	}{
		{name: "young, being created, not in Git: left to the shim, then created after the default grace",
			status: "CREATE_IN_PROGRESS",
			passes: []pass{{age: 10 * time.Second}, {age: 4*time.Minute + 59*time.Second},
				{age: 5 * time.Minute, want: "view+credential", creds: 1}}},
		{name: "a grace of its own",
			status: "CREATE_IN_PROGRESS", grace: 30 * time.Second,
			passes: []pass{{age: 29 * time.Second}, {age: 30 * time.Second, want: "view+credential", creds: 1}}},
		{name: "young, in Git already: its differences at once",
			status: "CREATE_IN_PROGRESS", inGit: true,
			passes: []pass{{age: 10 * time.Second, want: "view"}}},
		{name: "young, CREATE_COMPLETE, not in Git: created at once",
			status: "CREATE_COMPLETE",
			passes: []pass{{age: 10 * time.Second, want: "view+credential", creds: 1}}},
		{name: "young, CREATE_FAILED, not in Git: created at once",
			status: "CREATE_FAILED",
			passes: []pass{{age: 10 * time.Second, want: "view+credential", creds: 1}}},
		{name: "no created_at: taken as old",
			status: "CREATE_IN_PROGRESS", noCreated: true,
			passes: []pass{{age: 0, want: "view+credential", creds: 1}}},
		{name: "negative grace: no grace",
			status: "CREATE_IN_PROGRESS", grace: -1,
			passes: []pass{{age: 0, want: "view+credential", creds: 1}}},
		{name: "created_at ahead of the clock: young",
			status: "CREATE_IN_PROGRESS",
			passes: []pass{{age: -time.Minute}, {age: 5 * time.Minute, want: "view+credential", creds: 1}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := openstack.Cluster{UUID: uuid, Name: "prod-a", ProjectID: "9f3c1b2a4d5e4f6a8b7c6d5e4f3a2b1c",
				UserID: "0c7a4e2b9d8f4a1c8e6b5d4c3b2a1f0e", ClusterTemplateID: graceTemplate.UUID,
				MasterFlavorID: "m1.large", FlavorID: "m1.medium", MasterCount: 1, NodeCount: 2,
				Labels: map[string]string{}, CreateTimeout: 60, Status: tc.status, CreatedAt: created}
			if tc.noCreated {
				c.CreatedAt = time.Time{}
			}
			groups := []openstack.NodeGroup{
				{UUID: "20000000-0000-4000-8000-000000000001", Name: "default-master", ClusterID: uuid, Role: "master",
					FlavorID: "m1.large", NodeCount: 1, MinNodeCount: 1, IsDefault: true, Status: tc.status},
				{UUID: "20000000-0000-4000-8000-000000000002", Name: "default-worker", ClusterID: uuid, Role: "worker",
					FlavorID: "m1.medium", NodeCount: 2, MinNodeCount: 1, IsDefault: true, Status: tc.status},
			}
			m := &graceMagnum{clusters: []openstack.Cluster{c}, groups: map[string][]openstack.NodeGroup{uuid: groups}}
			clusters, _, err := reconciler.LoadClusters(noFiles{}, generator.MustSite(generator.DefaultConfig()), time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if tc.inGit {
				// The shim's create, one worker ago.
				ev := &v1alpha1.ClusterEvent{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.EventKind, ID: "shim-create",
					Operation: v1alpha1.CreateCluster, Cluster: c.Event(), ClusterTemplate: graceTemplate.Event()}
				for _, g := range groups {
					ev.NodeGroups = append(ev.NodeGroups, g.Event())
				}
				ev.NodeGroups[1].NodeCount, ev.Cluster.NodeCount = 1, new(1)
				clusters.Observe(ev, reconciler.Summary{EventID: ev.ID, StackID: "prod-a-x", Revision: "c0ffee"}, created)
			}
			sel, err := poller.SelectTemplates("gitops=true", "")
			if err != nil {
				t.Fatal(err)
			}
			var handed string
			credCalls := 0
			var now time.Time
			logs := leakcheck.Log(t, "the poller's log")
			p := &poller.Poller{Magnum: m, Select: sel, Clusters: clusters, AllProjects: true, CreateGrace: tc.grace,
				Converge: func(_ context.Context, views []reconciler.MagnumView) [][]reconciler.Summary {
					if len(views) != 1 || views[0].Cluster.UUID != uuid {
						t.Fatalf("handed over %+v, want the view of %s", views, uuid)
					}
					handed = "view"
					if views[0].Credential != nil {
						handed += "+credential"
					}
					return [][]reconciler.Summary{nil}
				},
				Credentials: func(context.Context, openstack.Cluster) (*v1alpha1.ApplicationCredential, error) {
					credCalls++
					return &v1alpha1.ApplicationCredential{ID: "ac-1", Secret: "not-a-real-secret-NOT-REAL"}, nil
				},
				Log: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
				Now: func() time.Time { return now }}
			for i, ps := range tc.passes {
				now = created.Add(ps.age)
				handed = ""
				start := len(logs.String())
				if err := p.Poll(t.Context()); err != nil {
					t.Fatalf("pass %d: %v", i, err)
				}
				if handed != ps.want {
					t.Errorf("pass %d, %s after created_at: handed over %q, want %q", i, ps.age, handed, ps.want)
				}
				if credCalls != ps.creds {
					t.Errorf("pass %d, %s after created_at: %d application credentials made, want %d", i, ps.age, credCalls, ps.creds)
				}
				// A pass that waits says why, naming the cluster.
				log := logs.String()[start:]
				waited := strings.Contains(log, `"cluster":"`+uuid+`"`) && strings.Contains(log, "driver shim")
				if waited != (ps.want == "") {
					t.Errorf("pass %d: the log says it waited: %v, want %v\n%s", i, waited, ps.want == "", log)
				}
			}
		})
	}
}

// noFiles is a repository with no file: an index loaded from it knows no cluster.
type noFiles struct{}

func (noFiles) ReadFile(string) ([]byte, bool, error) { return nil, false, nil }
func (noFiles) ListDir(string) ([]string, error)      { return nil, nil }
func (noFiles) ListFiles(string) ([]string, error)    { return nil, nil }
