package report_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/status/report"

	"github.com/gophercloud/gophercloud/v2"

	"github.com/magnum-gitops/magnum-gitops/status"
)

// fakeMagnum implements PATCH /v1/clusters/{uuid} as the Magnum API documents it (JSON
// Patch body, OpenStack-API-Version microversion header, 202 with the uuid), and refuses
// what Magnum refuses: other paths than node_count and the health fields, bad values.
type fakeMagnum struct {
	t       *testing.T
	mu      sync.Mutex
	patches [][]map[string]any
}

func (f *fakeMagnum) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fail := func(code int, msg string) {
		f.t.Errorf("fake Magnum: %s", msg)
		http.Error(w, `{"errors":[{"detail":"`+msg+`"}]}`, code)
	}
	if r.Method != http.MethodPatch {
		fail(http.StatusMethodNotAllowed, "method "+r.Method)
		return
	}
	uuid, ok := strings.CutPrefix(r.URL.Path, "/v1/clusters/")
	if !ok || strings.Contains(uuid, "/") || uuid == "" {
		fail(http.StatusNotFound, "path "+r.URL.Path)
		return
	}
	if got := r.Header.Get("OpenStack-API-Version"); got != "container-infra 1.10" {
		fail(http.StatusNotAcceptable, "microversion header "+got)
		return
	}
	if r.Header.Get("X-Auth-Token") != "token-123" {
		fail(http.StatusUnauthorized, "token")
		return
	}
	body, _ := io.ReadAll(r.Body)
	var patch []map[string]any
	if err := json.Unmarshal(body, &patch); err != nil || len(patch) == 0 {
		fail(http.StatusBadRequest, "body is not a JSON patch: "+string(body))
		return
	}
	for _, op := range patch {
		if op["op"] != "replace" {
			fail(http.StatusBadRequest, "op "+op["op"].(string))
			return
		}
		switch op["path"] {
		case "/health_status":
			if s, _ := op["value"].(string); s != "HEALTHY" && s != "UNHEALTHY" && s != "UNKNOWN" {
				fail(http.StatusBadRequest, "health_status value")
				return
			}
		case "/health_status_reason":
			m, ok := op["value"].(map[string]any)
			if !ok {
				fail(http.StatusBadRequest, "health_status_reason must be a dict")
				return
			}
			for _, v := range m {
				if _, ok := v.(string); !ok {
					fail(http.StatusBadRequest, "health_status_reason values must be strings")
					return
				}
			}
		case "/node_count":
			if n, ok := op["value"].(float64); !ok || n < 0 {
				fail(http.StatusBadRequest, "node_count")
				return
			}
		default:
			fail(http.StatusBadRequest, "cannot change cluster property(ies): "+op["path"].(string))
			return
		}
	}
	f.patches = append(f.patches, patch)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	json.NewEncoder(w).Encode(map[string]string{"uuid": uuid})
}

func magnumClient(url string) *gophercloud.ServiceClient {
	pc := &gophercloud.ProviderClient{TokenID: "token-123"}
	return &gophercloud.ServiceClient{ProviderClient: pc, Endpoint: url + "/v1/", Type: "container-infrastructure-management"}
}

func TestMagnumReporter(t *testing.T) {
	t.Parallel()
	fake := &fakeMagnum{t: t}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	m := &report.MagnumReporter{Client: magnumClient(srv.URL)}
	ctx := context.Background()
	reason := map[string]string{"cluster": "Ready", "infrastructure": "Ready", "controlplane": "Waiting on ['MachinesReady']", "nodegroup": "Ready"}
	r := status.Report{ClusterUUID: "3e9b7c52-1d4a-4f8e-9b6c-2a7d5e8f1c03", Status: v1alpha1.CreateComplete, NodeCount: 6,
		HealthStatus: v1alpha1.Unhealthy, HealthReason: reason}

	sent, err := m.Report(ctx, r, report.Known{HealthStatus: v1alpha1.Healthy, NodeCount: 3})
	if err != nil || !sent {
		t.Fatalf("report: %v %v", sent, err)
	}
	if len(fake.patches) != 1 || len(fake.patches[0]) != 3 {
		t.Fatalf("patches = %v, want one with health_status, health_status_reason and node_count", fake.patches)
	}
	// Nothing changed: no request.
	if sent, err := m.Report(ctx, r, report.Known{HealthStatus: v1alpha1.Unhealthy, HealthReason: reason, NodeCount: 6}); sent || err != nil {
		t.Errorf("unchanged report sent a request: %v %v", sent, err)
	}
	// An unreadable management cluster does not flap Magnum's health.
	u := status.Unreadable(status.View{ClusterUUID: r.ClusterUUID, Status: v1alpha1.CreateComplete}, context.DeadlineExceeded)
	if sent, err := m.Report(ctx, u, report.Known{HealthStatus: v1alpha1.Healthy, HealthReason: reason}); sent || err != nil {
		t.Errorf("UNKNOWN health was written: %v %v", sent, err)
	}
	// node_count follows the autoscaler only once the operation is complete.
	r2 := r
	r2.Status = v1alpha1.UpdateInProgress
	if _, err := m.Report(ctx, r2, report.Known{HealthStatus: v1alpha1.Unhealthy, HealthReason: reason, NodeCount: 3}); err != nil {
		t.Fatal(err)
	}
	if len(fake.patches) != 1 {
		t.Errorf("node_count written during an operation: %v", fake.patches)
	}
}
