package openstack_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv/keystone"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv/magnumstandin"
	"github.com/magnum-gitops/magnum-gitops/reconciler/openstack"
)

const templateUUID = "27e3153e-d5bf-4b7e-b517-fb518e17f34c"

func clusterDoc(i int, project string) map[string]any {
	return map[string]any{
		"uuid": fmt.Sprintf("00000000-0000-4000-8000-%012d", i), "name": fmt.Sprintf("c%d", i),
		"cluster_template_id": templateUUID, "keypair": "ops-key", "docker_volume_size": nil,
		"labels": map[string]string{"auto_scaling_enabled": "true"}, "labels_overridden": map[string]string{},
		"labels_added": map[string]string{}, "labels_skipped": map[string]string{},
		"master_flavor_id": "m1.large", "flavor_id": "m1.medium", "create_timeout": 60,
		"stack_id": fmt.Sprintf("c%d-2b7xq4mzkd5h", i), "status": "CREATE_COMPLETE", "status_reason": nil,
		"health_status": "HEALTHY", "health_status_reason": map[string]string{"api": "ok"},
		"discovery_url": nil, "api_address": "https://203.0.113.7:6443", "project_id": project,
		"user_id": "0c7a4e2b9d8f4a1c8e6b5d4c3b2a1f0e", "coe_version": "v1.33.7", "container_version": nil,
		"fixed_network": "private", "fixed_subnet": nil, "floating_ip_enabled": true, "master_lb_enabled": true,
		"node_count": 3, "master_count": 3, "node_addresses": []string{}, "master_addresses": []string{},
		"created_at": "2026-01-0" + fmt.Sprint(i) + "T10:00:00+00:00", "updated_at": "2026-02-01T10:00:00+00:00",
		"links": []any{}, "faults": map[string]string{},
	}
}

func templateDoc(i int) map[string]any {
	uuid := templateUUID
	if i > 0 {
		uuid = fmt.Sprintf("10000000-0000-4000-8000-%012d", i)
	}
	return map[string]any{
		"uuid": uuid, "name": fmt.Sprintf("k8s-%d", i), "image_id": "ubuntu-2404-kube-v1.33.7",
		"keypair_id": "ops-key", "external_network_id": "public", "fixed_network": nil, "fixed_subnet": nil,
		"dns_nameserver": "8.8.8.8", "network_driver": "calico", "flavor_id": "m1.medium", "master_flavor_id": "m1.large",
		"floating_ip_enabled": true, "master_lb_enabled": true, "coe": "kubernetes", "cluster_distro": "ubuntu",
		"driver": "k8s_capi_helm_v1",
		"public": true, "hidden": false, "labels": map[string]string{"capi_helm_chart_version": "0.27.0"},
		"server_type": "vm", "apiserver_port": nil, "docker_volume_size": nil, "volume_driver": "cinder",
		"registry_enabled": false, "tls_disabled": false, "insecure_registry": nil, "project_id": "p",
		"user_id": "u", "created_at": "2026-01-01T00:00:00+00:00", "updated_at": nil, "links": []any{},
	}
}

func nodeGroupDoc(cluster, name, role string, i int, maxCount any) map[string]any {
	return map[string]any{
		"id": i, "uuid": fmt.Sprintf("20000000-0000-4000-8000-%012d", i), "name": name, "cluster_id": cluster,
		"project_id": "p", "docker_volume_size": nil, "labels": map[string]string{"kube_tag": "v1.33.7"},
		"labels_overridden": map[string]string{}, "labels_added": map[string]string{}, "labels_skipped": map[string]string{},
		"links": []any{}, "flavor_id": "m1.medium", "image_id": "ubuntu", "node_addresses": []string{},
		"node_count": 3, "role": role, "min_node_count": 1, "max_node_count": maxCount, "is_default": role == "master" || name == "default-worker",
		"stack_id": "s", "status": "UPDATE_IN_PROGRESS", "status_reason": "scaling", "version": nil,
		"created_at": "2026-01-01T00:00:00+00:00", "updated_at": "2026-02-01T10:00:00+00:00",
	}
}

type magnumFixture struct {
	magnum *magnumstandin.Magnum
	client *openstack.Magnum
	cloud  *openstack.Cloud
	c1     string // uuid of the cluster with node groups
}

func newMagnumFixture(t *testing.T) magnumFixture {
	ks := keystone.Start(t)
	clearOSEnv(t)
	projectID, projectName := ks.CreateProject(t)
	user := ks.CreateUser(t, projectID, "member")
	region := ks.NewRegion(t)
	data := magnumstandin.Data{NodeGroups: map[string][]map[string]any{}}
	for i := 1; i <= 5; i++ {
		data.Clusters = append(data.Clusters, clusterDoc(i, projectID))
	}
	for i := range 3 {
		data.Templates = append(data.Templates, templateDoc(i))
	}
	c1 := data.Clusters[0]["uuid"].(string)
	data.NodeGroups[c1] = []map[string]any{
		nodeGroupDoc(c1, "default-master", "master", 1, nil),
		nodeGroupDoc(c1, "default-worker", "worker", 2, 8),
		nodeGroupDoc(c1, "gpu-a100", "worker", 3, 2),
	}
	m := magnumstandin.StartMagnum(t, ks, data)
	ks.RegisterService(t, region, "container-infra", "magnum", m.URL+"/v1")
	cloud := connect(t, passwordCloud(ks, user, projectName, region), openstack.Config{})
	client, err := openstack.NewMagnum(cloud)
	if err != nil {
		t.Fatal(err)
	}
	return magnumFixture{magnum: m, client: client, cloud: cloud, c1: c1}
}

func TestMagnumListClustersPaginates(t *testing.T) {
	f := newMagnumFixture(t)
	tests := []struct {
		pageSize     int
		wantLimit    int
		wantRequests int // /v1/clusters/detail requests
		wantMarkers  []string
	}{
		{pageSize: 2, wantLimit: 2, wantRequests: 3, wantMarkers: []string{"", "00000000-0000-4000-8000-000000000002", "00000000-0000-4000-8000-000000000004"}},
		{pageSize: 5, wantLimit: 5, wantRequests: 2, wantMarkers: []string{"", "00000000-0000-4000-8000-000000000005"}}, // a full page has a next link
		{pageSize: 0, wantLimit: openstack.DefaultPageSize, wantRequests: 1, wantMarkers: []string{""}},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("page size %d", tc.pageSize), func(t *testing.T) {
			before := len(f.magnum.Log())
			cs, err := f.client.ListClusters(t.Context(), tc.pageSize)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, c := range cs {
				names = append(names, c.Name)
			}
			if strings.Join(names, ",") != "c1,c2,c3,c4,c5" {
				t.Fatalf("clusters %v, want c1…c5 in Magnum's order", names)
			}
			reqs := f.magnum.Log()[before:]
			if len(reqs) != tc.wantRequests {
				t.Fatalf("requests %v, want %d", reqs, tc.wantRequests)
			}
			for i, r := range reqs {
				wantLimit := fmt.Sprintf("limit=%d", tc.wantLimit)
				if !strings.HasPrefix(r, "GET /v1/clusters/detail?") || !strings.Contains(r, wantLimit) ||
					(tc.wantMarkers[i] != "") != strings.Contains(r, "marker="+tc.wantMarkers[i]) {
					t.Errorf("request %d = %q, want detail with %s and marker %q", i, r, wantLimit, tc.wantMarkers[i])
				}
			}
		})
	}
}

func TestMagnumClusterAsEvent(t *testing.T) {
	f := newMagnumFixture(t)
	c, err := f.client.GetCluster(t.Context(), "c1")
	if err != nil {
		t.Fatal(err)
	}
	if c.HealthStatus != "HEALTHY" || c.HealthStatusReason["api"] != "ok" || c.APIAddress != "https://203.0.113.7:6443" || c.COEVersion != "v1.33.7" {
		t.Errorf("status fields %+v", c)
	}
	three, yes, sixty := 3, true, 60
	want := v1alpha1.Cluster{UUID: f.c1, Name: "c1", ProjectID: c.ProjectID, UserID: "0c7a4e2b9d8f4a1c8e6b5d4c3b2a1f0e",
		StackID: "c1-2b7xq4mzkd5h", Keypair: "ops-key", MasterFlavorID: "m1.large", FlavorID: "m1.medium",
		MasterCount: &three, NodeCount: &three, FixedNetwork: "private",
		Labels:            v1alpha1.Labels{"auto_scaling_enabled": "true"},
		FloatingIPEnabled: &yes, MasterLBEnabled: &yes, ClusterTemplateID: templateUUID, CreateTimeout: &sixty,
		Status: v1alpha1.CreateComplete, UpdatedAt: "2026-02-01T10:00:00Z"}
	if diff := cmp.Diff(want, c.Event()); diff != "" {
		t.Fatalf("event cluster (-want +got):\n%s", diff)
	}
	if _, err := f.client.GetCluster(t.Context(), "no-such-cluster"); !openstack.IsNotFound(err) {
		t.Fatalf("unknown cluster: %v, want not found", err)
	}
}

func TestMagnumTemplatesAndNodeGroups(t *testing.T) {
	f := newMagnumFixture(t)
	ts, err := f.client.ListClusterTemplates(t.Context(), 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 3 || ts[0].UUID != templateUUID {
		t.Fatalf("templates %+v", ts)
	}
	got := ts[0].Event()
	if got.ImageID != "ubuntu-2404-kube-v1.33.7" || got.ExternalNetworkID != "public" || got.NetworkDriver != "calico" ||
		got.DNSNameserver != "8.8.8.8" || got.Labels["capi_helm_chart_version"] != "0.27.0" {
		t.Errorf("template as event %+v", got)
	}
	if ts[0].Driver != "k8s_capi_helm_v1" {
		t.Errorf("template driver %q, want k8s_capi_helm_v1 (Magnum 2024.1's field, which gophercloud does not read)", ts[0].Driver)
	}
	if one, err := f.client.GetClusterTemplate(t.Context(), templateUUID); err != nil || one.Name != "k8s-0" || one.Driver != "k8s_capi_helm_v1" {
		t.Errorf("template by id: %+v %v", one, err)
	}

	before := len(f.magnum.Log())
	ngs, err := f.client.ListNodeGroups(t.Context(), f.c1)
	if err != nil {
		t.Fatal(err)
	}
	// The list is a summary; every group is then read in full.
	if n := len(f.magnum.Log()) - before; n != 1+3 {
		t.Errorf("%d requests, want 1 list + 3 gets: %v", n, f.magnum.Log()[before:])
	}
	tests := []struct {
		name      string
		role      string
		maxCount  *int
		isDefault bool
	}{
		{"default-master", "master", nil, true},
		{"default-worker", "worker", ptr(8), true},
		{"gpu-a100", "worker", ptr(2), false},
	}
	if len(ngs) != len(tests) {
		t.Fatalf("node groups %+v", ngs)
	}
	for i, tc := range tests {
		ev := ngs[i].Event()
		if ev.Name != tc.name || ev.Role != tc.role || ev.IsDefault != tc.isDefault ||
			ev.MinNodeCount == nil || *ev.MinNodeCount != 1 || ev.Labels["kube_tag"] != "v1.33.7" || ev.Status != v1alpha1.UpdateInProgress {
			t.Errorf("node group %d: %+v", i, ev)
		}
		if diff := cmp.Diff(tc.maxCount, ev.MaxNodeCount); diff != "" {
			t.Errorf("node group %d max node count (-want +got):\n%s", i, diff)
		}
		if ngs[i].StatusReason != "scaling" {
			t.Errorf("node group %d status reason %q", i, ngs[i].StatusReason)
		}
	}
}

func TestMagnumMicroversionRequired(t *testing.T) {
	// The stand-in refuses requests without the microversion; the client always sends it.
	f := newMagnumFixture(t)
	raw, err := f.cloud.ContainerInfra()
	if err != nil {
		t.Fatal(err)
	}
	resp, err := raw.Get(t.Context(), raw.ServiceURL("clusters", "detail"), nil, nil)
	if err == nil || !strings.Contains(err.Error(), "406") {
		t.Fatalf("request without microversion: %v %v, want 406", resp, err)
	}
	if _, err := f.client.ListClusters(t.Context(), 0); err != nil {
		t.Fatalf("client with microversion: %v", err)
	}
}
