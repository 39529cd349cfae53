package service_test

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// TestMetrics: after an event, its retry and a second event for the same cluster (a new
// id, so a new record: a commit), /metrics counts them by operation and outcome, the
// retry's commit not twice, and has the latency histograms of every step.
func TestMetrics(t *testing.T) {
	t.Parallel()
	h := start(t, nil)
	create := fixture(t, "01-prod-a-create.yaml")
	again := []byte(strings.Replace(string(create), "id: evt-01-create-cluster", "id: evt-01-create-cluster-again", 1))
	for _, body := range [][]byte{create, create, again} {
		if code, ans := h.post(body); code != http.StatusOK {
			t.Fatalf("%d %v", code, ans)
		}
	}
	if code, _ := h.post([]byte(`{"operation": "create_cluster", "bogus": 1}`)); code != http.StatusBadRequest {
		t.Fatalf("bad request answered %d", code)
	}
	values, err := scrape(h.url)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]float64{
		`magnum_gitops_events_total{operation="create_cluster",outcome="committed"}`: 2,
		`magnum_gitops_events_total{operation="create_cluster",outcome="replayed"}`:  1,
		`magnum_gitops_commits_total`:                              2,
		`magnum_gitops_event_duration_seconds_count`:               3,
		`magnum_gitops_group_size_count`:                           2,
		`magnum_gitops_step_duration_seconds_count{step="render"}`: 2,
		`magnum_gitops_step_duration_seconds_count{step="commit"}`: 2,
		`magnum_gitops_step_duration_seconds_count{step="push"}`:   2,
	} {
		if got, ok := values[name]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", name, got, ok, want)
		}
	}
	if values[`magnum_gitops_step_duration_seconds_sum{step="push"}`] <= 0 {
		t.Error("the push took no time")
	}
}

// scrape reads the service's /metrics as a map from each sample's name (labels included,
// as exposed) to its value.
func scrape(url string) (map[string]float64, error) {
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	values := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		if name, v, ok := strings.Cut(line, " "); ok && !strings.HasPrefix(line, "#") {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				values[name] = f
			}
		}
	}
	return values, nil
}
