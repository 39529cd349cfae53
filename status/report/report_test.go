package report_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/status"
	"github.com/magnum-gitops/magnum-gitops/status/report"

	"github.com/gophercloud/gophercloud/v2"
)

// fakeMagnum implements PATCH /v1/clusters/{uuid} as Magnum 15's API code does (JSON
// Patch body, OpenStack-API-Version microversion header, 202 with the uuid), and refuses
// what Magnum refuses: other paths than node_count and the health fields, bad values, and
// a value that is neither a string nor an integer — health_status_reason is JSON text
// the API turns into the dict it stores. TestFakeMagnumAgreesWithRecording holds it to
// what Magnum's own code answered (testdata/magnum-15-cluster-patch.json); it accepts only
// JSON text, a subset of the Python literals Magnum parses.
// GET /v1/clusters/{uuid} answers 200 with the cluster's fixture body (testdata, in the
// shape of the Magnum API reference's "Show details of a cluster") or 404 with Magnum's
// error envelope for a cluster it does not hold.
type fakeMagnum struct {
	t *testing.T
	// refusals, when set, lets the fake refuse without failing the test.
	refusals bool
	// clusters maps a uuid to its GET response body.
	clusters map[string][]byte
	mu       sync.Mutex
	gets     int
	patches  [][]map[string]any
	// updates are, per accepted PATCH, the values Magnum hands its conductor: the patched
	// fields, health_status_reason parsed into its map.
	updates []map[string]any
}

func (f *fakeMagnum) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fail := func(code int, msg string) {
		if !f.refusals {
			f.t.Errorf("fake Magnum: %s", msg)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(map[string]any{"errors": []map[string]any{{"status": code, "detail": msg}}})
	}
	if r.Method != http.MethodPatch && r.Method != http.MethodGet {
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
	w.Header().Set("OpenStack-API-Version", "container-infra 1.10")
	if r.Method == http.MethodGet {
		f.gets++
		body, ok := f.clusters[uuid]
		w.Header().Set("Content-Type", "application/json")
		if !ok {
			msg := "Cluster " + uuid + " could not be found."
			w.WriteHeader(http.StatusNotFound)
			json.NewEncoder(w).Encode(map[string]any{"errors": []map[string]any{{
				"request_id": "", "code": "client", "status": http.StatusNotFound,
				"title": msg, "detail": msg, "links": []any{},
			}}})
			return
		}
		w.WriteHeader(http.StatusOK)
		w.Write(body)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var patch []map[string]any
	if err := json.Unmarshal(body, &patch); err != nil || len(patch) == 0 {
		fail(http.StatusBadRequest, "body is not a JSON patch: "+string(body))
		return
	}
	update := map[string]any{}
	for _, op := range patch {
		if op["op"] != "replace" {
			fail(http.StatusBadRequest, "op "+op["op"].(string))
			return
		}
		// JsonPatchType.value is MultiType(text, int): a JSON object or list is refused
		// before any path is looked at.
		switch v := op["value"].(type) {
		case string:
		case float64:
			if v != math.Trunc(v) {
				fail(http.StatusBadRequest, "Wrong type. Expected str or int, got float")
				return
			}
		default:
			fail(http.StatusBadRequest, "Wrong type. Expected str or int, got "+pyType(v))
			return
		}
		path, _ := op["path"].(string)
		switch path {
		case "/health_status":
			if s, _ := op["value"].(string); s != "HEALTHY" && s != "UNHEALTHY" && s != "UNKNOWN" {
				fail(http.StatusBadRequest, "health_status value")
				return
			}
			update["health_status"] = op["value"]
		case "/health_status_reason":
			text, _ := op["value"].(string)
			var m map[string]string
			if err := json.Unmarshal([]byte(text), &m); err != nil || m == nil {
				fail(http.StatusBadRequest, "Couldn't apply patch: health_status_reason is not a mapping of strings: "+text)
				return
			}
			update["health_status_reason"] = m
		case "/node_count":
			n, ok := op["value"].(float64)
			if !ok || n < 0 {
				fail(http.StatusBadRequest, "node_count")
				return
			}
			update["node_count"] = int(n)
		case "/api_address", "/node_addresses", "/master_addresses", "/stack_id", "/uuid", "/id",
			"/created_at", "/updated_at", "/links", "/project_id", "/user_id":
			fail(http.StatusBadRequest, fmt.Sprintf("'%s' is an internal attribute and can not be updated", path))
			return
		default:
			fail(http.StatusBadRequest, "cannot change cluster property(ies): "+path)
			return
		}
	}
	f.patches = append(f.patches, patch)
	f.updates = append(f.updates, update)
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
	const uuid = "3e9b7c52-1d4a-4f8e-9b6c-2a7d5e8f1c03"
	fake := &fakeMagnum{t: t, clusters: map[string][]byte{uuid: []byte(`{"uuid": "` + uuid + `", "status": "CREATE_COMPLETE", "node_count": 3}`)}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	m := &report.MagnumReporter{Client: magnumClient(srv.URL)}
	ctx := context.Background()
	reason := map[string]string{"cluster": "Ready", "infrastructure": "Ready", "controlplane": "Waiting on ['MachinesReady']", "nodegroup": "Ready"}
	// The autoscaler took the cluster from the 3 nodes Magnum asked for to 6.
	r := status.Report{ClusterUUID: "3e9b7c52-1d4a-4f8e-9b6c-2a7d5e8f1c03", Status: v1alpha1.CreateComplete, NodeCount: 6,
		HealthStatus: v1alpha1.Unhealthy, HealthReason: reason, WorkerGroups: 1, DesiredNodeCount: 3}

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
	// With two worker groups Magnum would take node_count as the default group's new size.
	r3 := r
	r3.WorkerGroups, r3.NodeCount = 2, 8
	if _, err := m.Report(ctx, r3, report.Known{HealthStatus: v1alpha1.Unhealthy, HealthReason: reason, NodeCount: 6}); err != nil {
		t.Fatal(err)
	}
	if len(fake.patches) != 1 {
		t.Errorf("node_count written for a cluster of two worker groups: %v", fake.patches)
	}
	// Magnum already saved another count (a resize or an update in its driver call, the
	// cluster still *_COMPLETE): writing CAPI's count would undo that request. Health is
	// still written; a report of node_count alone is deferred.
	fake.mu.Lock()
	fake.clusters[uuid] = []byte(`{"uuid": "` + uuid + `", "status": "UPDATE_COMPLETE", "node_count": 1}`)
	fake.mu.Unlock()
	sent, err = m.Report(ctx, r, report.Known{HealthStatus: v1alpha1.Healthy, NodeCount: 3})
	if !sent || err != nil || len(fake.patches) != 2 || len(fake.patches[1]) != 2 || fake.patches[1][0]["path"] == "/node_count" || fake.patches[1][1]["path"] == "/node_count" {
		t.Errorf("with a request on its way: sent %v, %v, patches %v; want health only", sent, err, fake.patches)
	}
	sent, err = m.Report(ctx, r, report.Known{HealthStatus: v1alpha1.Unhealthy, HealthReason: reason, NodeCount: 3})
	if sent || !errors.Is(err, report.ErrNotUpdatable) || len(fake.patches) != 2 {
		t.Errorf("node_count alone with a request on its way: sent %v, %v, patches %v; want nothing sent, deferred", sent, err, fake.patches)
	}
	// A cluster Magnum holds in an operation: its conductor would drop the update after
	// the API's 202, so nothing is sent, and the caller is told to try again.
	for _, held := range []string{"UPDATE_IN_PROGRESS", "UPDATE_FAILED"} {
		fake.mu.Lock()
		fake.clusters[uuid] = []byte(`{"uuid": "` + uuid + `", "status": "` + held + `"}`)
		fake.mu.Unlock()
		sent, err := m.Report(ctx, r, report.Known{HealthStatus: v1alpha1.Healthy, NodeCount: 6})
		if sent || !errors.Is(err, report.ErrNotUpdatable) {
			t.Errorf("%s: sent %v, err %v; want nothing sent and ErrNotUpdatable", held, sent, err)
		}
		if len(fake.patches) != 2 {
			t.Errorf("%s: a PATCH was sent: %v", held, fake.patches)
		}
	}
}

// TestMagnumReporterKnown reads what Magnum holds (as a new leader does once per cluster)
// and checks that reporting an identical status afterwards writes nothing.
func TestMagnumReporterKnown(t *testing.T) {
	t.Parallel()
	reason := map[string]string{"cluster": "Ready", "infrastructure": "Ready", "controlplane": "Waiting on ['MachinesReady']", "nodegroup": "Ready"}
	healthy := map[string]string{"cluster": "Ready", "infrastructure": "Ready", "controlplane": "Ready", "nodegroup": "Ready"}
	tests := []struct {
		name    string
		uuid    string
		fixture string // GET response body in testdata; "" for a cluster Magnum does not hold
		want    report.Known
		// report is sent with the Known read; wantPaths are the fields it PATCHes.
		report    status.Report
		wantPaths []string
	}{{
		name:    "health and node count held: identical status writes nothing",
		uuid:    "5c2f8e41-7b3d-4a9e-8f60-1d2c3b4a5e6f",
		fixture: "cluster-get-one-resp.json",
		want:    report.Known{HealthStatus: v1alpha1.Unhealthy, HealthReason: reason, NodeCount: 6},
		report: status.Report{ClusterUUID: "5c2f8e41-7b3d-4a9e-8f60-1d2c3b4a5e6f", Status: v1alpha1.UpdateComplete,
			NodeCount: 6, HealthStatus: v1alpha1.Unhealthy, HealthReason: reason, WorkerGroups: 1},
	}, {
		name:    "health not reported yet: only the health fields are written",
		uuid:    "0d4e6f8a-2b1c-4d3e-9f5a-6b7c8d9e0f1a",
		fixture: "cluster-get-one-no-health-resp.json",
		want:    report.Known{NodeCount: 2},
		report: status.Report{ClusterUUID: "0d4e6f8a-2b1c-4d3e-9f5a-6b7c8d9e0f1a", Status: v1alpha1.CreateComplete,
			NodeCount: 2, HealthStatus: v1alpha1.Healthy, HealthReason: healthy, WorkerGroups: 1},
		wantPaths: []string{"/health_status", "/health_status_reason"},
	}, {
		name: "cluster unknown to Magnum: 404",
		uuid: "7f3a9c1e-5d2b-4e8f-a6c4-3b1d9e7f5a2c",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := &fakeMagnum{t: t, clusters: map[string][]byte{}}
			if tt.fixture != "" {
				body, err := os.ReadFile(filepath.Join("testdata", tt.fixture))
				if err != nil {
					t.Fatal(err)
				}
				fake.clusters[tt.uuid] = body
			}
			srv := httptest.NewServer(fake)
			defer srv.Close()
			m := &report.MagnumReporter{Client: magnumClient(srv.URL)}
			ctx := context.Background()

			got, err := m.Known(ctx, tt.uuid)
			if tt.fixture == "" {
				if !errors.Is(err, report.ErrNotFound) || !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
					t.Fatalf("Known(%s) error = %v, want ErrNotFound and a gophercloud 404", tt.uuid, err)
				}
				var code gophercloud.ErrUnexpectedResponseCode
				if !errors.As(err, &code) || code.Actual != http.StatusNotFound || code.Method != http.MethodGet {
					t.Errorf("Known(%s) error = %#v, want gophercloud's ErrUnexpectedResponseCode for GET 404", tt.uuid, err)
				}
				if got.HealthStatus != "" || got.HealthReason != nil || got.NodeCount != 0 {
					t.Errorf("Known(%s) = %+v on error, want zero", tt.uuid, got)
				}
				if fake.gets != 1 || len(fake.patches) != 0 {
					t.Errorf("requests: %d GET, %d PATCH; want 1 GET", fake.gets, len(fake.patches))
				}
				return
			}
			if err != nil {
				t.Fatalf("Known(%s): %v", tt.uuid, err)
			}
			if got.HealthStatus != tt.want.HealthStatus || got.NodeCount != tt.want.NodeCount || !maps.Equal(got.HealthReason, tt.want.HealthReason) {
				t.Fatalf("Known(%s) = %+v, want %+v", tt.uuid, got, tt.want)
			}

			sent, err := m.Report(ctx, tt.report, got)
			if err != nil {
				t.Fatalf("Report: %v", err)
			}
			if sent != (len(tt.wantPaths) > 0) {
				t.Errorf("Report sent = %v, want %v", sent, len(tt.wantPaths) > 0)
			}
			var paths []string
			for _, p := range fake.patches {
				for _, op := range p {
					paths = append(paths, op["path"].(string))
				}
			}
			if !slices.Equal(paths, tt.wantPaths) {
				t.Errorf("PATCHed %v, want %v", paths, tt.wantPaths)
			}
			// Known's, and the one Report makes before it PATCHes.
			if want := 1 + len(fake.patches); fake.gets != want {
				t.Errorf("%d GET requests, want %d", fake.gets, want)
			}
		})
	}
}

// pyType names a JSON value's type as Python does in Magnum's "Wrong type" error.
func pyType(v any) string {
	switch v.(type) {
	case map[string]any:
		return "dict"
	case []any:
		return "list"
	case bool:
		return "bool"
	case nil:
		return "NoneType"
	}
	return fmt.Sprintf("%T", v)
}
