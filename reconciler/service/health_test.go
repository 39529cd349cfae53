package service_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/reconciler/service"
	"github.com/magnum-gitops/magnum-gitops/status/report"
)

// magnumAPI is a stand-in for the Magnum API's GET and PATCH /v1/clusters/{uuid}, built
// from the documented shapes (JSON Patch, microversion header, 202; the cluster's
// health_status, health_status_reason and node_count): the real API needs RabbitMQ and a
// conductor. It records every patch and keeps what the patches wrote, for GET. As Magnum
// 15 does (status/report's recording of its API code), it takes health_status_reason only
// as text, which it stores as the map GET shows.
type magnumAPI struct {
	t       *testing.T
	mu      sync.Mutex
	patches [][]map[string]any
	gets    int
	state   map[string]map[string]any // uuid → the fields patched so far
}

func (m *magnumAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	uuid, ok := strings.CutPrefix(r.URL.Path, "/v1/clusters/")
	if !ok || (r.Method != http.MethodPatch && r.Method != http.MethodGet) ||
		r.Header.Get("OpenStack-API-Version") != "container-infra 1.10" || r.Header.Get("X-Auth-Token") != "magnum-token" {
		m.t.Errorf("unexpected request %s %s %v", r.Method, r.URL.Path, r.Header)
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.state == nil {
		m.state = map[string]map[string]any{}
	}
	if r.Method == http.MethodGet {
		m.gets++
		c := map[string]any{"uuid": uuid, "name": "prod-a", "status": "CREATE_COMPLETE", "node_count": 3, "master_count": 3}
		for k, v := range m.state[uuid] {
			c[k] = v
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(c)
		return
	}
	b, _ := io.ReadAll(r.Body)
	var patch []map[string]any
	if err := json.Unmarshal(b, &patch); err != nil {
		m.t.Errorf("not a JSON patch: %s", b)
	}
	m.patches = append(m.patches, patch)
	if m.state[uuid] == nil {
		m.state[uuid] = map[string]any{}
	}
	for _, op := range patch {
		value := op["value"]
		if op["path"] == "/health_status_reason" {
			text, ok := value.(string)
			var reason map[string]string
			if !ok || json.Unmarshal([]byte(text), &reason) != nil {
				m.t.Errorf("health_status_reason %#v: Magnum takes a mapping as text", value)
				http.Error(w, `{"errors":[{"detail":"Wrong type"}]}`, http.StatusBadRequest)
				return
			}
			value = reason
		}
		m.state[uuid][strings.TrimPrefix(op["path"].(string), "/")] = value
	}
	w.WriteHeader(http.StatusAccepted)
	_, _ = w.Write([]byte(`{"uuid":"` + uuid + `"}`))
}

func (m *magnumAPI) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.patches)
}

// last reports whether the newest patch sets health_status to want.
func (m *magnumAPI) last(want string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.patches) == 0 {
		return false
	}
	for _, op := range m.patches[len(m.patches)-1] {
		if op["path"] == "/health_status" && op["value"] == want {
			return true
		}
	}
	return false
}

func (m *magnumAPI) paths(i int) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, op := range m.patches[i] {
		out = append(out, op["path"].(string))
	}
	return out
}

// TestHealthReportedToMagnum: the leader PATCHes health when it changes, and only then.
func TestHealthReportedToMagnum(t *testing.T) {
	t.Parallel()
	api := &magnumAPI{t: t}
	srv := httptest.NewServer(api)
	defer srv.Close()
	client := &gophercloud.ServiceClient{ProviderClient: &gophercloud.ProviderClient{TokenID: "magnum-token", HTTPClient: *srv.Client()},
		Endpoint: srv.URL + "/", ResourceBase: srv.URL + "/v1/"}
	h := start(t, func(o *service.Options) {
		o.Reporter, o.HealthInterval = &report.MagnumReporter{Client: client}, 100*time.Millisecond
	})
	// The management cluster of a healthy prod-a (fixtures/status/27).
	raw, err := os.ReadFile("../../fixtures/status/27-all-ready-v1beta1.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var sf struct {
		Objects json.RawMessage `json:"objects"`
	}
	if err := yaml.Unmarshal(raw, &sf); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(h.objects, sf.Objects, 0o600); err != nil {
		t.Fatal(err)
	}
	if code, ans := h.post(fixture(t, "01-prod-a-create.yaml")); code != http.StatusOK {
		t.Fatal(code, ans)
	}
	waitFor := func(n int) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for api.count() < n {
			if time.Now().After(deadline) {
				t.Fatalf("%d health reports, want %d", api.count(), n)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// A snapshot taken before the objects were written may be reported first (UNHEALTHY);
	// wait for the report of the healthy cluster.
	deadline := time.Now().Add(20 * time.Second)
	for !api.last("HEALTHY") {
		if time.Now().After(deadline) {
			t.Fatalf("no HEALTHY report: %v", api.patches)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if p := strings.Join(api.paths(api.count()-1), ","); !strings.Contains(p, "/health_status") || !strings.Contains(p, "/health_status_reason") {
		t.Errorf("report %s, want the health fields", p)
	}
	// The leader's count of clusters by Magnum status, which an alert watches.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		values, err := scrape(h.url)
		if err != nil {
			t.Fatal(err)
		}
		if values[`magnum_gitops_clusters{status="CREATE_COMPLETE"}`] == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("magnum_gitops_clusters: %v, want one CREATE_COMPLETE", values)
		}
	}
	reported := api.count()
	time.Sleep(2500 * time.Millisecond) // many intervals, one snapshot refresh: nothing changed
	if n := api.count(); n != reported {
		t.Errorf("%d more reports while nothing changed: %v", n-reported, api.patches)
	}
	// The control plane goes away: health changes and is reported once more.
	var objs []map[string]any
	_ = json.Unmarshal(sf.Objects, &objs)
	var kept []map[string]any
	for _, o := range objs {
		if o["kind"] != "KubeadmControlPlane" {
			kept = append(kept, o)
		}
	}
	b, _ := json.Marshal(kept)
	if err := os.WriteFile(h.objects, b, 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(reported + 1)
	if !api.last("UNHEALTHY") {
		t.Errorf("after the control plane went: %v", api.patches)
	}

	// Another process leads (a restart, a failover): it reads what Magnum holds once per
	// cluster instead of writing every cluster again.
	reported = api.count()
	api.mu.Lock()
	gets := api.gets
	api.mu.Unlock()
	h.restart(func(o *service.Options) {
		o.Reporter, o.HealthInterval = &report.MagnumReporter{Client: client}, 100*time.Millisecond
	})
	deadline = time.Now().Add(20 * time.Second)
	for {
		api.mu.Lock()
		n := api.gets
		api.mu.Unlock()
		if n > gets {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the new leader did not read Magnum's health")
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(1500 * time.Millisecond) // many intervals
	api.mu.Lock()
	defer api.mu.Unlock()
	if n := len(api.patches); n != reported || api.gets != gets+1 {
		t.Errorf("after the restart: %d more reports and %d reads of Magnum, want none and 1: %v", n-reported, api.gets-gets, api.patches[reported:])
	}
}
