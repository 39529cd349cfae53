package report_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/status"
	"github.com/magnum-gitops/magnum-gitops/status/report"
)

// recording is testdata/magnum-15-cluster-patch.json: PATCH /v1/clusters/{id} requests and
// what Magnum 15's own API code answered, recorded by
// contrib/magnum-driver/tests/test_magnum_api_patch.py (which checks on every run of the
// driver's tests that the answers still hold).
type recording struct {
	RecordedWith string `json:"recorded_with"`
	Cases        []struct {
		Name    string           `json:"name"`
		Request []map[string]any `json:"request"`
		Status  int              `json:"status"`
		// Conductor is what the API handed to the conductor on 202.
		Conductor map[string]any `json:"conductor"`
		Error     string         `json:"error"`
	} `json:"cases"`
}

func loadRecording(t *testing.T) recording {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "magnum-15-cluster-patch.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rec recording
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	if len(rec.Cases) == 0 {
		t.Fatal("no recorded cases")
	}
	return rec
}

// TestFakeMagnumAgreesWithRecording replays every recorded request to the fake Magnum the
// other tests use: it must accept what Magnum accepted, hand on the same values, and refuse
// what Magnum refused.
func TestFakeMagnumAgreesWithRecording(t *testing.T) {
	t.Parallel()
	const uuid = "3e9b7c52-1d4a-4f8e-9b6c-2a7d5e8f1c03"
	for _, c := range loadRecording(t).Cases {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			fake := &fakeMagnum{t: t, refusals: true}
			srv := httptest.NewServer(fake)
			defer srv.Close()
			body, _ := json.Marshal(c.Request)
			req, _ := http.NewRequest(http.MethodPatch, srv.URL+"/v1/clusters/"+uuid, bytes.NewReader(body))
			req.Header.Set("OpenStack-API-Version", "container-infra 1.10")
			req.Header.Set("X-Auth-Token", "token-123")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != c.Status {
				t.Fatalf("fake answered %d, Magnum %d (%s)", resp.StatusCode, c.Status, c.Error)
			}
			if c.Status != http.StatusAccepted {
				return
			}
			// The patched fields reach the conductor as Magnum handed them on.
			got := fake.updates[0]
			for _, op := range c.Request {
				field := op["path"].(string)[1:]
				want := c.Conductor[field]
				if n, ok := want.(float64); ok {
					want = int(n)
				}
				if m, ok := want.(map[string]any); ok {
					s := map[string]string{}
					for k, v := range m {
						s[k] = v.(string)
					}
					want = s
				}
				if diff := cmp.Diff(want, got[field]); diff != "" {
					t.Errorf("%s: fake handed on, against Magnum (-want +got):\n%s", field, diff)
				}
			}
		})
	}
}

// TestMagnumReporterSendsWhatMagnumAccepted: for every health_status_reason Magnum accepted
// in the recording, the reporter's PATCH for that map is the recorded request, byte for
// byte in the reason's text (json.Marshal's escapes included).
func TestMagnumReporterSendsWhatMagnumAccepted(t *testing.T) {
	t.Parallel()
	ran := 0
	for _, c := range loadRecording(t).Cases {
		stored, ok := c.Conductor["health_status_reason"].(map[string]any)
		var sent any
		for _, op := range c.Request {
			if op["path"] == "/health_status_reason" {
				sent = op["value"]
			}
		}
		if c.Status != http.StatusAccepted || !ok || sent == nil {
			continue
		}
		ran++
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			reason := map[string]string{}
			for k, v := range stored {
				reason[k] = v.(string)
			}
			fake := &fakeMagnum{t: t, clusters: map[string][]byte{
				"3e9b7c52-1d4a-4f8e-9b6c-2a7d5e8f1c03": []byte(`{"uuid": "3e9b7c52-1d4a-4f8e-9b6c-2a7d5e8f1c03", "status": "UPDATE_COMPLETE"}`)}}
			srv := httptest.NewServer(fake)
			defer srv.Close()
			m := &report.MagnumReporter{Client: magnumClient(srv.URL)}
			health := v1alpha1.HealthStatus(c.Conductor["health_status"].(string))
			r := status.Report{ClusterUUID: "3e9b7c52-1d4a-4f8e-9b6c-2a7d5e8f1c03", Status: v1alpha1.UpdateComplete,
				HealthStatus: health, HealthReason: reason, WorkerGroups: 1}
			if n, ok := c.Conductor["node_count"].(float64); ok {
				r.NodeCount = int(n)
			}
			// Magnum held something else for every field the recorded request patches.
			known := report.Known{HealthStatus: v1alpha1.UnknownHealth, HealthReason: map[string]string{"old": "x"}, NodeCount: r.NodeCount}
			if hasPath(c.Request, "/node_count") {
				known.NodeCount = r.NodeCount + 1
			}
			if !hasPath(c.Request, "/health_status") {
				known.HealthStatus = health
			}
			if sent, err := m.Report(context.Background(), r, known); err != nil || !sent {
				t.Fatalf("Report: %v %v", sent, err)
			}
			if len(fake.patches) != 1 {
				t.Fatalf("patches: %v", fake.patches)
			}
			if diff := cmp.Diff(c.Request, fake.patches[0]); diff != "" {
				t.Errorf("reporter sent, against what Magnum accepted (-want +got):\n%s", diff)
			}
		})
	}
	if ran < 2 {
		t.Fatalf("%d accepted health_status_reason cases in the recording, want at least 2", ran)
	}
}

func hasPath(ops []map[string]any, path string) bool {
	for _, op := range ops {
		if op["path"] == path {
			return true
		}
	}
	return false
}
