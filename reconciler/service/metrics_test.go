package service_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/magnum-gitops/magnum-gitops/gitrepo"
	"github.com/magnum-gitops/magnum-gitops/reconciler/service"
)

// TestMetrics: after an event, its retry and a second event for the same cluster (a new
// id, so a new record: a commit), /metrics counts them by operation and outcome, the
// retry's commit not twice, each group (of one event here) once, and has the latency
// histograms of every step. Events refused before the reconciler are counted too.
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
	if code, _ := h.post(create, "Content-Type", "text/plain"); code != http.StatusBadRequest {
		t.Fatalf("wrong content type answered %d", code)
	}
	if code, _ := h.post(create, "Authorization", "Bearer nope"); code != http.StatusUnauthorized {
		t.Fatalf("wrong token answered %d", code)
	}
	if code, _ := h.post(bytes.Repeat([]byte("#"), 2<<20)); code != http.StatusRequestEntityTooLarge {
		t.Fatalf("large body answered %d", code)
	}
	// A read of the API without a token is no event.
	req, _ := http.NewRequest(http.MethodGet, h.url+"/v1/clusters/nope", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.Body.Close() != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("GET without a token: %v %v", resp, err)
	}
	values, err := scrapeGroups(h.url, 3)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]float64{
		`magnum_gitops_events_total{operation="create_cluster",outcome="committed"}`: 2,
		`magnum_gitops_events_total{operation="create_cluster",outcome="replayed"}`:  1,
		`magnum_gitops_events_total{operation="unknown",outcome="invalid"}`:          2,
		`magnum_gitops_events_total{operation="unknown",outcome="unauthorized"}`:     1,
		`magnum_gitops_events_total{operation="unknown",outcome="too_large"}`:        1,
		`magnum_gitops_commits_total`:                                                2,
		`magnum_gitops_pushes_total`:                                                 2,
		`magnum_gitops_push_retries_total`:                                           0,
		`magnum_gitops_event_duration_seconds_count`:                                 3,
		`magnum_gitops_group_size_count`:                                             3,
		`magnum_gitops_group_size_sum`:                                               3,
		`magnum_gitops_step_duration_seconds_count{step="render"}`:                   2,
		`magnum_gitops_step_duration_seconds_count{step="commit"}`:                   2,
		`magnum_gitops_step_duration_seconds_count{step="push"}`:                     2,
	} {
		if got, ok := values[name]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", name, got, ok, want)
		}
	}
	if values[`magnum_gitops_step_duration_seconds_sum{step="push"}`] <= 0 {
		t.Error("the push took no time")
	}
	var events float64
	for name, v := range values {
		if strings.HasPrefix(name, "magnum_gitops_events_total{") {
			events += v
		}
	}
	if events != 7 {
		t.Errorf("%v events counted, want the 7 posted", events)
	}
}

// TestMetricsPerGroup: three events that arrive together make one group, whose push had
// to be repeated (the remote moved since the service fetched): the group's size, push and
// retry count once, not once per event, and each event's duration includes its wait for
// the group to fill (MaxWait).
func TestMetricsPerGroup(t *testing.T) {
	t.Parallel()
	const wait = 2 * time.Second
	// No readiness fetch: the service's clone must stay behind the remote.
	h := start(t, func(o *service.Options) { o.MaxWait, o.ReadyInterval = wait, time.Hour })
	// Someone else pushes: the service's first push of the group is refused.
	other, err := gitrepo.Open(context.Background(), gitrepo.Options{URL: h.git.URL + "/" + h.repo,
		Author: gitrepo.Signature{Name: "a human", Email: "human@example.org"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Apply(context.Background(), gitrepo.Change{Files: map[string][]byte{"README.md": []byte("# clusters\n")}, Subject: "readme"}); err != nil {
		t.Fatal(err)
	}
	const n = 3
	var wg sync.WaitGroup
	for i := range n {
		body := clusterEvent(t, i, 3)
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodPost, h.url+"/v1/events", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("event %d: %d %s", i, resp.StatusCode, b)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	values, err := scrapeGroups(h.url, 1)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]float64{
		`magnum_gitops_events_total{operation="resize_cluster",outcome="committed"}`: n,
		`magnum_gitops_commits_total`:                n,
		`magnum_gitops_pushes_total`:                 1,
		`magnum_gitops_push_retries_total`:           1,
		`magnum_gitops_group_size_count`:             1,
		`magnum_gitops_group_size_sum`:               n,
		`magnum_gitops_event_duration_seconds_count`: n,
	} {
		if got, ok := values[name]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", name, got, ok, want)
		}
	}
	// Every event waited most of MaxWait before its group was processed.
	const prefix = `magnum_gitops_event_duration_seconds_bucket{le="`
	for name, v := range values {
		if le, ok := strings.CutPrefix(name, prefix); ok {
			if b, err := strconv.ParseFloat(strings.TrimSuffix(le, `"}`), 64); err == nil && b < wait.Seconds()/2 && v != 0 {
				t.Errorf("%s = %v: events answered faster than they waited for their group", name, v)
			}
		}
	}
}

// scrape reads the service's /metrics as a map from each sample's name (labels included,
// as exposed) to its value.
// scrapeGroups scrapes once serve has counted at least groups groups: a group is counted
// from its Report, which serve reads once the group's clients are answered, so an
// answered client may scrape before it.
func scrapeGroups(url string, groups float64) (map[string]float64, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		values, err := scrape(url)
		if err != nil || values["magnum_gitops_group_size_count"] >= groups || time.Now().After(deadline) {
			return values, err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

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
