package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"helm.sh/helm/v3/pkg/chartutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/magnum-gitops/magnum-gitops/internal/chartrender"
	"github.com/magnum-gitops/magnum-gitops/internal/gitserver"
	"github.com/magnum-gitops/magnum-gitops/internal/servicechart"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv/keystone"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv/magnumstandin"
)

// The chart's alerts and dashboard (deploy/chart/magnum-gitops: templates/prometheusrule.yaml,
// dashboards/magnum-gitops.json) against what serve really exports: its own /metrics,
// scraped from a running serve. The chart's other checks, which need no metric list, are
// internal/servicechart's.

// query is one PromQL expression the chart hands Prometheus or Grafana, and where it is.
type query struct{ where, expr string }

// chartQueries renders the chart as `helm template` does, with deploy/service's values and
// the PrometheusRule and the dashboard on, and returns the expression of every alert, and
// every query of the dashboard as Grafana sends it (dashboardQueries).
func chartQueries(t *testing.T) (alerts, dashboard []query) {
	t.Helper()
	const root = "../.."
	ch, err := servicechart.Load(root)
	if err != nil {
		t.Fatal(err)
	}
	values, err := chartutil.ReadValuesFile(filepath.Join(root, servicechart.Dir, servicechart.DeployValues))
	if err != nil {
		t.Fatal(err)
	}
	values["metrics"] = map[string]any{
		"serviceMonitor":   map[string]any{"enabled": true},
		"prometheusRule":   map[string]any{"enabled": true},
		"grafanaDashboard": map[string]any{"enabled": true},
	}
	manifest, err := servicechart.Render(ch, servicechart.DeployRelease, servicechart.DeployNamespace, values)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := chartrender.Parse(strings.NewReader(manifest))
	if err != nil {
		t.Fatal(err)
	}
	var rule *unstructured.Unstructured
	var board string
	for _, o := range objs {
		switch o.GetKind() {
		case "PrometheusRule":
			rule = o
		case "ConfigMap":
			if s, ok, _ := unstructured.NestedString(o.Object, "data", "magnum-gitops.json"); ok {
				board = s
			}
		}
	}
	if rule == nil || board == "" {
		t.Fatal("the chart rendered no PrometheusRule or no dashboard ConfigMap with metrics.prometheusRule and metrics.grafanaDashboard on")
	}
	groups, _, _ := unstructured.NestedSlice(rule.Object, "spec", "groups")
	for _, g := range groups {
		rules, _ := g.(map[string]any)["rules"].([]any)
		for _, r := range rules {
			r := r.(map[string]any)
			alerts = append(alerts, query{fmt.Sprintf("alert %v", r["alert"]), fmt.Sprint(r["expr"])})
		}
	}
	var d map[string]any
	if err := json.Unmarshal([]byte(board), &d); err != nil {
		t.Fatalf("the dashboard's JSON: %v", err)
	}
	if dashboard, err = dashboardQueries(d); err != nil {
		t.Fatal(err)
	}
	return alerts, dashboard
}

// labelValues is a Grafana variable's query that lists a label's values on a selector.
var labelValues = regexp.MustCompile(`^label_values\((.+),\s*\w+\)$`)

// dashboardQueries are the expressions of every panel's targets (rows' panels included)
// and the selectors of the query variables, as Grafana sends them: its variables
// replaced by values (grafanaVariables).
func dashboardQueries(d map[string]any) ([]query, error) {
	vars := map[string]bool{}
	var out []query
	templating, _ := d["templating"].(map[string]any)
	list, _ := templating["list"].([]any)
	for _, v := range list {
		v := v.(map[string]any)
		name := v["name"].(string)
		vars[name] = true
		if v["type"] != "query" {
			continue
		}
		q, _ := v["query"].(map[string]any)
		s, _ := q["query"].(string)
		if m := labelValues.FindStringSubmatch(s); m != nil {
			out = append(out, query{"variable " + name, m[1]})
		} else {
			return nil, fmt.Errorf("variable %s: query %q is no label_values(selector, label)", name, s)
		}
	}
	var walk func(panels []any)
	walk = func(panels []any) {
		for _, p := range panels {
			p := p.(map[string]any)
			targets, _ := p["targets"].([]any)
			for _, tg := range targets {
				tg := tg.(map[string]any)
				out = append(out, query{fmt.Sprintf("panel %q target %v", p["title"], tg["refId"]), tg["expr"].(string)})
			}
			sub, _ := p["panels"].([]any)
			walk(sub)
		}
	}
	panels, _ := d["panels"].([]any)
	walk(panels)
	for i, q := range out {
		expr, err := grafanaVariables(q.expr, vars)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", q.where, err)
		}
		out[i].expr = expr
	}
	return out, nil
}

// grafanaVariable is a variable in a Grafana query: $name or ${name}.
var grafanaVariable = regexp.MustCompile(`\$\{?(\w+)\}?`)

// grafanaVariables replaces Grafana's variables in a query as Grafana does before it sends
// it: its intervals by a duration, the dashboard's own variables by a value. Any other
// variable is an error: Prometheus would receive it as it is.
func grafanaVariables(expr string, dashboardVars map[string]bool) (string, error) {
	var err error
	out := grafanaVariable.ReplaceAllStringFunc(expr, func(m string) string {
		name := grafanaVariable.FindStringSubmatch(m)[1]
		switch {
		case name == "__rate_interval" || name == "__interval" || name == "__range":
			return "5m"
		case dashboardVars[name]:
			return "value-of-" + name
		}
		err = fmt.Errorf("%s is no variable of Grafana or of the dashboard", m)
		return m
	})
	return out, err
}

// selectedMetrics parses expr with Prometheus' own PromQL parser (the options of a
// Prometheus run without feature flags) and returns the metric name of every series
// selector in it.
func selectedMetrics(expr string) ([]string, error) {
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		return nil, err
	}
	var names []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		name := vs.Name
		for _, m := range vs.LabelMatchers {
			if m.Name != model.MetricNameLabel {
				continue
			}
			if m.Type != labels.MatchEqual {
				err = fmt.Errorf("%s: selects metrics by a pattern (%s), which cannot be checked", vs, m)
				return err
			}
			name = m.Value
		}
		if name == "" {
			err = fmt.Errorf("%s: selects no metric by name", vs)
			return err
		}
		names = append(names, name)
		return nil
	})
	return names, err
}

// unexported checks every query: each must parse and select only metrics serve exports or
// Prometheus' own up. It returns one message per failure.
func unexported(queries []query, exported map[string]bool) []string {
	var out []string
	for _, q := range queries {
		names, err := selectedMetrics(q.expr)
		if err != nil {
			out = append(out, fmt.Sprintf("%s: %q: %v", q.where, q.expr, err))
			continue
		}
		for _, n := range names {
			if !exported[n] && n != "up" {
				out = append(out, fmt.Sprintf("%s: %q selects %s, which serve does not export", q.where, q.expr, n))
			}
		}
	}
	return out
}

// scrape reads serve's /metrics as Prometheus does and parses it with expfmt into its
// metric families, by name.
func scrape(addr string) (map[string]*dto.MetricFamily, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	if f := expfmt.ResponseFormat(resp.Header); f.FormatType() != expfmt.TypeTextPlain {
		return nil, fmt.Errorf("GET /metrics: %s, want the text format", resp.Header.Get("Content-Type"))
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(resp.Body)
}

// seriesNames are the names of the series a scrape's families hold, as PromQL selects
// them: a histogram family's _bucket, _sum and _count (no series bears the family's own
// name), a summary's own name (its quantiles) with _sum and _count, a counter's, gauge's or
// untyped metric's the family's name. A family of any other type is an error.
func seriesNames(families map[string]*dto.MetricFamily) (map[string]bool, error) {
	names := map[string]bool{}
	for name, f := range families {
		switch f.GetType() {
		case dto.MetricType_HISTOGRAM:
			names[name+"_bucket"], names[name+"_sum"], names[name+"_count"] = true, true, true
		case dto.MetricType_SUMMARY:
			names[name], names[name+"_sum"], names[name+"_count"] = true, true, true
		case dto.MetricType_COUNTER, dto.MetricType_GAUGE, dto.MetricType_UNTYPED:
			names[name] = true
		default:
			return nil, fmt.Errorf("%s: a family of type %s: teach seriesNames its series", name, f.GetType())
		}
	}
	return names, nil
}

// servedMetrics is every series name a running serve's /metrics holds once it has done
// what each of its metrics counts, read from the scrape and nothing else.
//
// A scrape shows only families that hold a series: client_golang's registry gathers the
// metrics its collectors yield, and a vector none of whose label values was ever used
// yields none, so neither its samples nor its HELP and TYPE lines are written (and expfmt's
// parser drops a family that has HELP and TYPE but no sample). There is therefore no
// honest way to read an empty vector's name from outside serve, and none is attempted:
// serve is made to create every series instead. serve pre-creates at 0 the vectors an
// alert compares (magnum_gitops_health_reports_total, magnum_gitops_step_duration_seconds,
// magnum_gitops_reload_errors_total); magnum_gitops_events_total gets its first series from
// one event posted here; magnum_gitops_clusters is set only by the leader's health pass,
// which runs only with OpenStack configured, so serve runs against the real Keystone
// (internal/testenv/keystone) with the Magnum stand-in in its catalog, leads alone
// (--objects: no Lease), and is scraped once a health pass has judged the posted cluster.
// A metric added to serve later without a series at start fails the test that queries
// it, until this function makes serve count it.
func servedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	ks := keystone.Start(t)
	region := ks.NewRegion(t)
	projectID, projectName := ks.CreateProject(t)
	user := ks.CreateUser(t, projectID, "member")
	event := resizeEvent(t, 0, 1)
	var ev struct {
		Cluster struct{ UUID, Name string } `json:"cluster"`
	}
	if err := json.Unmarshal(event, &ev); err != nil || ev.Cluster.UUID == "" {
		t.Fatalf("the event's cluster: %v", err)
	}
	magnum := magnumstandin.StartMagnum(t, ks, magnumstandin.Data{Clusters: []map[string]any{
		magnumstandin.ClusterDoc(ev.Cluster.UUID, ev.Cluster.Name, projectID, user.ID, "template")}})
	ks.RegisterService(t, region, "container-infra", "magnum", magnum.URL+"/v1")

	dir := t.TempDir()
	git := gitserver.Start(t)
	config := serveConfig(t, dir, git.Init("clusters.git"), "alerts-token")
	clouds := filepath.Join(dir, "clouds.yaml")
	if err := os.WriteFile(clouds, fmt.Appendf(nil, "clouds:\n  test:\n"+
		"    auth: {auth_url: %q, username: %q, password: %q, user_domain_id: %q, project_name: %q, project_domain_id: %q}\n"+
		"    region_name: %q\n    identity_api_version: 3\n",
		ks.AuthURL, user.Name, user.Password, user.DomainID, projectName, user.DomainID, region), 0o600); err != nil {
		t.Fatal(err)
	}
	appendServe(t, config, fmt.Sprintf("openstack: {cloud: test, clouds_file: %s}\n", clouds))
	proc := startServe(t, config, testenv.FreeAddr(t), "--health-interval", "200ms")
	defer func() { _ = proc.cmd.Process.Kill(); _, _ = proc.cmd.Process.Wait() }()

	if _, ok := postEventToken(proc.addr, event, "alerts-token"); !ok {
		t.Fatalf("the event was not answered 200:\n%s", proc.logs)
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		families, err := scrape(proc.addr)
		if err != nil {
			t.Fatal(err)
		}
		if judged := families["magnum_gitops_clusters"]; judged != nil {
			for _, m := range judged.GetMetric() {
				t.Logf("magnum_gitops_clusters%v %v", m.GetLabel(), m.GetGauge().GetValue())
			}
			names, err := seriesNames(families)
			if err != nil {
				t.Fatal(err)
			}
			return names
		}
		if time.Now().After(deadline) {
			t.Fatalf("no health pass judged the cluster in 60s: no magnum_gitops_clusters series in /metrics (families %v)\n%s",
				slices.Sorted(maps.Keys(families)), proc.logs)
		}
	}
}

// TestAlertsSelectServedMetrics: serve's scrape, read as series names, holds its metrics
// as PromQL selects them (a histogram's _bucket, _sum and _count, the vectors that only
// an event or a health pass fill, the Go runtime's and the process's) and nothing a test
// made up; every alert's expression and every dashboard query of the chart selects only
// those, or Prometheus' up.
func TestAlertsSelectServedMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("subprocess test")
	}
	exported := servedMetrics(t)
	for _, tc := range []struct {
		name string
		want bool
	}{
		{"magnum_gitops_events_total", true},                  // a counter vector: its series came with the event
		{"magnum_gitops_clusters", true},                      // a gauge vector: the leader's health pass
		{"magnum_gitops_resync_changed_clusters_total", true}, // a counter
		{"magnum_gitops_health_reports_total", true},          // a vector made at 0
		{"magnum_gitops_reload_errors_total", true},           // cmd/magnum-gitops' own
		{"magnum_gitops_build_info", true},                    // a gauge with constant labels
		{"magnum_gitops_leader", true},                        // a gauge
		{"magnum_gitops_event_duration_seconds_bucket", true}, // a histogram's series
		{"magnum_gitops_event_duration_seconds_sum", true},
		{"magnum_gitops_event_duration_seconds_count", true},
		{"magnum_gitops_step_duration_seconds_bucket", true}, // a histogram vector's
		{"magnum_gitops_event_duration_seconds", false},      // no series of that name
		{"go_goroutines", true},                              // the Go collector
		{"go_gc_duration_seconds", true},                     // its summary's quantiles
		{"process_resident_memory_bytes", true},              // the process collector
		{"magnum_gitops_pushes_failed_total", false},         // serve counts no failed push
		{"up", false}, // Prometheus' own, not serve's
	} {
		if exported[tc.name] != tc.want {
			t.Errorf("%s in the scrape: %v, want %v", tc.name, exported[tc.name], tc.want)
		}
	}
	alerts, dashboard := chartQueries(t)
	for _, msg := range unexported(append(alerts, dashboard...), exported) {
		t.Error(msg)
	}
}

// TestAlertQueries: the chart's alerts and dashboard queries parse with Prometheus' PromQL
// parser and select metrics by name, the walk finds every panel's query, and the dashboard
// shows what an operator looks at first: events, latency, pushes, the leader, reload errors,
// clusters by status, resync drift and the runtime. It needs no serve.
func TestAlertQueries(t *testing.T) {
	t.Parallel()
	alerts, dashboard := chartQueries(t)
	if len(alerts) < 8 {
		t.Errorf("%d alerts read: %v", len(alerts), alerts)
	}
	if len(dashboard) < 22 {
		t.Errorf("%d dashboard queries read: the walk lost panels", len(dashboard))
	}
	selected := map[string]bool{}
	for _, q := range append(alerts, dashboard...) {
		names, err := selectedMetrics(q.expr)
		if err != nil {
			t.Errorf("%s: %q: %v", q.where, q.expr, err)
		}
		if strings.HasPrefix(q.where, "panel ") {
			for _, n := range names {
				selected[n] = true
			}
		}
	}
	for _, n := range []string{"magnum_gitops_events_total", "magnum_gitops_event_duration_seconds_bucket", "magnum_gitops_step_duration_seconds_bucket",
		"magnum_gitops_pushes_total", "magnum_gitops_leader", "magnum_gitops_reload_errors_total", "magnum_gitops_clusters",
		"magnum_gitops_resync_changed_clusters_total", "go_goroutines", "process_resident_memory_bytes"} {
		if !selected[n] {
			t.Errorf("no dashboard panel queries %s", n)
		}
	}
}

// TestAlertsUnexported: the check itself fails a query that selects a metric serve does
// not export, one that does not parse, and one it cannot judge; it passes serve's metrics,
// up, and a selector by __name__.
func TestAlertsUnexported(t *testing.T) {
	t.Parallel()
	exported := map[string]bool{"magnum_gitops_pushes_total": true, "magnum_gitops_leader": true}
	for _, tc := range []struct {
		expr, want string // want: in the one message; empty for none
	}{
		{`sum(rate(magnum_gitops_pushes_total{namespace="ns"}[5m])) > 0`, ""},
		{`absent(up{job="magnum-gitops"} == 1)`, ""},
		{`max({__name__="magnum_gitops_leader"}) < 1 and on() sum(rate(magnum_gitops_pushes_total[5m])) == 0`, ""},
		{`sum(rate(magnum_gitops_pushes_failed_total[5m])) > 0`, "selects magnum_gitops_pushes_failed_total, which serve does not export"},
		{`magnum_gitops_leader and on() magnum_gitops_clusters_past_deadline > 0`, "selects magnum_gitops_clusters_past_deadline"},
		{`sum(rate(magnum_gitops_pushes_total[5m]) > 0`, "unclosed left parenthesis"},
		{`rate(magnum_gitops_pushes_total[$__rate_interval])`, "parse error"},
		{`{__name__=~"magnum_gitops_.+"}`, "by a pattern"},
	} {
		got := unexported([]query{{"test", tc.expr}}, exported)
		switch {
		case tc.want == "" && len(got) > 0:
			t.Errorf("%s: %v, want no message", tc.expr, got)
		case tc.want != "" && (len(got) != 1 || !strings.Contains(got[0], tc.want)):
			t.Errorf("%s: %v, want one message with %q", tc.expr, got, tc.want)
		}
	}
}
