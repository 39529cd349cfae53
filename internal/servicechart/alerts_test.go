package servicechart

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// chartAlerts are the alerts the chart's PrometheusRule holds (docs/service.md, Alerts and
// dashboard).
var chartAlerts = []string{"MagnumGitopsDown", "MagnumGitopsNoLeader", "MagnumGitopsEventsFailing",
	"MagnumGitopsPushesFailing", "MagnumGitopsHealthReportsFailing", "MagnumGitopsSecretReloadRefused"}

// dashboardFile is the Grafana dashboard the chart ships, relative to the chart.
const dashboardFile = "dashboards/magnum-gitops.json"

// query is one PromQL expression the chart hands Prometheus or Grafana, and where it is.
type query struct{ where, expr string }

// monitoringValues are the required values with the ServiceMonitor, the PrometheusRule and
// the dashboard on.
func monitoringValues() map[string]any {
	v := requiredValues()
	v["metrics"] = map[string]any{
		"serviceMonitor":   map[string]any{"enabled": true},
		"prometheusRule":   map[string]any{"enabled": true},
		"grafanaDashboard": map[string]any{"enabled": true},
	}
	return v
}

// rules are the PrometheusRule's rules, by alert.
func rules(t *testing.T, objs map[string]*unstructured.Unstructured) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, g := range field(t, objs["PrometheusRule/magnum-gitops"], "spec", "groups").([]any) {
		for _, r := range g.(map[string]any)["rules"].([]any) {
			rule := r.(map[string]any)
			out[rule["alert"].(string)] = rule
		}
	}
	return out
}

// dashboard is the dashboard the ConfigMap carries, decoded.
func dashboard(t *testing.T, objs map[string]*unstructured.Unstructured) map[string]any {
	t.Helper()
	data := field(t, objs["ConfigMap/magnum-gitops-dashboard"], "data").(map[string]any)
	var d map[string]any
	if err := json.Unmarshal([]byte(data["magnum-gitops.json"].(string)), &d); err != nil {
		t.Fatalf("the dashboard's JSON: %v", err)
	}
	return d
}

// ruleQueries are the expressions of every rule.
func ruleQueries(rules map[string]map[string]any) []query {
	var out []query
	for _, name := range slices.Sorted(maps.Keys(rules)) {
		out = append(out, query{"alert " + name, rules[name]["expr"].(string)})
	}
	return out
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
			if m.Name != labels.MetricName {
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

// TestAlertsSelectExportedMetrics: every alert's expression and every dashboard query
// parses with Prometheus' PromQL parser and selects only metrics serve's code exports
// (serveMetrics) or Prometheus' up.
func TestAlertsSelectExportedMetrics(t *testing.T) {
	t.Parallel()
	exported := serveMetrics(t)
	objs := objects(t, loadChart(t), "magnum-gitops", monitoringValues())
	rs := rules(t, objs)
	if got := slices.Sorted(maps.Keys(rs)); !slices.Equal(got, slices.Sorted(slices.Values(chartAlerts))) {
		t.Errorf("alerts %v, want %v", got, chartAlerts)
	}
	dq, err := dashboardQueries(dashboard(t, objs))
	if err != nil {
		t.Fatal(err)
	}
	queries := append(ruleQueries(rs), dq...)
	if len(dq) < 20 {
		t.Errorf("%d dashboard queries read: the walk lost panels", len(dq))
	}
	for _, msg := range unexported(queries, exported) {
		t.Error(msg)
	}
	// What the dashboard must show: events, latency, pushes, the leader, reload errors, the
	// runtime.
	selected := map[string]bool{}
	for _, q := range dq {
		names, _ := selectedMetrics(q.expr)
		for _, n := range names {
			selected[n] = true
		}
	}
	for _, n := range []string{"magnum_gitops_events_total", "magnum_gitops_event_duration_seconds_bucket", "magnum_gitops_step_duration_seconds_bucket",
		"magnum_gitops_pushes_total", "magnum_gitops_leader", "magnum_gitops_reload_errors_total", "go_goroutines", "process_resident_memory_bytes"} {
		if !selected[n] {
			t.Errorf("no dashboard panel queries %s", n)
		}
	}
}

// loadRules loads a PrometheusRule's groups as Prometheus loads a rules file (and
// prometheus-operator's admission webhook checks a PrometheusRule): rulefmt.Parse, with
// the expressions, durations, label names and annotation templates validated.
func loadRules(t *testing.T, pr *unstructured.Unstructured) []error {
	t.Helper()
	file, err := yaml.Marshal(map[string]any{"groups": field(t, pr, "spec", "groups")})
	if err != nil {
		t.Fatal(err)
	}
	_, errs := rulefmt.Parse(file, false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.New(slog.NewTextHandler(io.Discard, nil)))
	return errs
}

// TestRulesLoadInPrometheus: the PrometheusRule's rules, the chart's and the values'
// additional ones, load as a Prometheus rules file; an annotation whose template does not
// parse is refused.
func TestRulesLoadInPrometheus(t *testing.T) {
	t.Parallel()
	ch := loadChart(t)
	for _, values := range []map[string]any{monitoringValues(), ciValues(t, "all-options-values.yaml")} {
		if errs := loadRules(t, objects(t, ch, "magnum-gitops", values)["PrometheusRule/magnum-gitops"]); len(errs) > 0 {
			t.Errorf("the rules do not load: %v", errs)
		}
	}
	bad := ciValues(t, "all-options-values.yaml")
	bad["metrics"].(map[string]any)["prometheusRule"].(map[string]any)["additionalRules"] = []any{map[string]any{
		"alert": "Broken", "expr": "magnum_gitops_leader < 1", "annotations": map[string]any{"summary": "{{ $value | nosuchfunction }}"}}}
	errs := loadRules(t, objects(t, ch, "magnum-gitops", bad)["PrometheusRule/magnum-gitops"])
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "nosuchfunction") {
		t.Errorf("a broken annotation template loaded: %v", errs)
	}
}

// TestUnexportedNamesAMetric: the check itself fails a query that selects a metric serve
// does not export, one that does not parse, and one it cannot judge; it passes serve's
// metrics, up, and a selector by __name__.
func TestUnexportedNamesAMetric(t *testing.T) {
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

// headingAnchors are the anchors GitHub gives a Markdown file's headings: lower case,
// spaces as '-', punctuation but '-' and '_' dropped.
func headingAnchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	fence := false
	for line := range strings.Lines(string(b)) {
		if strings.HasPrefix(line, "```") {
			fence = !fence
		}
		title, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " ")
		if fence || !ok || !strings.HasPrefix(line, "#") {
			continue
		}
		var a strings.Builder
		for _, r := range strings.TrimSpace(strings.ToLower(title)) {
			switch {
			case r == ' ':
				a.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				a.WriteRune(r)
			}
		}
		out[a.String()] = true
	}
	return out
}

// TestAlertAnnotations: every alert of the chart has a severity, a summary, a description
// and a runbook_url into the project's docs at the release's tag, at a heading that
// exists; Prometheus' own template variables reach it unrendered by Helm; a
// runbookBaseURL replaces the base.
func TestAlertAnnotations(t *testing.T) {
	t.Parallel()
	ch := loadChart(t)
	base := ch.Metadata.Home + "/blob/v" + ch.Metadata.AppVersion + "/docs/"
	rs := rules(t, objects(t, ch, "magnum-gitops", monitoringValues()))
	for _, name := range chartAlerts {
		r := rs[name]
		if r == nil {
			t.Errorf("no alert %s", name)
			continue
		}
		if sev := r["labels"].(map[string]any)["severity"]; sev != "critical" && sev != "warning" {
			t.Errorf("%s: severity %v", name, sev)
		}
		ann := r["annotations"].(map[string]any)
		for _, k := range []string{"summary", "description"} {
			if s, _ := ann[k].(string); len(s) < 20 {
				t.Errorf("%s: %s %q", name, k, s)
			}
		}
		url, _ := ann["runbook_url"].(string)
		doc, ok := strings.CutPrefix(url, base)
		file, anchor, _ := strings.Cut(doc, "#")
		if !ok || anchor == "" {
			t.Errorf("%s: runbook_url %q, want %s<file>#<heading>", name, url, base)
			continue
		}
		if !headingAnchors(t, filepath.Join(root, "docs", file))[anchor] {
			t.Errorf("%s: runbook_url %q: docs/%s has no heading #%s", name, url, file, anchor)
		}
	}
	for alert, want := range map[string]string{
		"MagnumGitopsHealthReportsFailing": "{{ $value | humanize }} failures",
		"MagnumGitopsSecretReloadRefused":  "A changed {{ $labels.what }} file",
	} {
		if d := rs[alert]["annotations"].(map[string]any)["description"].(string); !strings.Contains(d, want) {
			t.Errorf("%s: description %q, want Prometheus' %q", alert, d, want)
		}
	}
	other := rules(t, objects(t, ch, "magnum-gitops-all", ciValues(t, "all-options-values.yaml")))
	if url := other["MagnumGitopsDown"]["annotations"].(map[string]any)["runbook_url"]; url != "https://docs.example.org/magnum-gitops/docs/troubleshooting.md#serve-does-not-start" {
		t.Errorf("runbook_url with runbookBaseURL: %v", url)
	}
	if expr := other["MagnumGitopsNoLeader"]["expr"]; !strings.Contains(expr.(string), `namespace="magnum-gitops-all"`) {
		t.Errorf("NoLeader in another namespace: %v", expr)
	}
}

// TestGrafanaDashboard: off by default; on, a ConfigMap carries the chart's
// dashboards/magnum-gitops.json as it is, labelled for the Grafana sidecar, with the
// values' labels and annotations; the dashboard asks for its data source and namespace.
func TestGrafanaDashboard(t *testing.T) {
	t.Parallel()
	ch := loadChart(t)
	if objs := objects(t, ch, "magnum-gitops", requiredValues()); objs["ConfigMap/magnum-gitops-dashboard"] != nil {
		t.Error("a dashboard by default")
	}
	objs := objects(t, ch, "magnum-gitops-all", ciValues(t, "all-options-values.yaml"))
	cm := objs["ConfigMap/magnum-gitops-dashboard"]
	if cm == nil {
		t.Fatal("no dashboard ConfigMap with metrics.grafanaDashboard.enabled")
	}
	if l := cm.GetLabels(); l["grafana_dashboard"] != "1" || l["release"] != "prometheus" || l["app.kubernetes.io/name"] != "magnum-gitops" {
		t.Errorf("labels %v", l)
	}
	if a := cm.GetAnnotations(); a["grafana_folder"] != "Magnum" {
		t.Errorf("annotations %v", a)
	}
	if cm.GetNamespace() != "magnum-gitops-all" {
		t.Errorf("namespace %s", cm.GetNamespace())
	}
	file, err := os.ReadFile(filepath.Join(root, Dir, dashboardFile))
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]any
	if err := json.Unmarshal(file, &want); err != nil {
		t.Fatal(err)
	}
	d := dashboard(t, objs)
	if !reflect.DeepEqual(d, want) {
		t.Error("the ConfigMap's dashboard differs from " + dashboardFile)
	}
	if d["uid"] != "magnum-gitops" || d["title"] != "magnum-gitops" {
		t.Errorf("uid %v, title %v", d["uid"], d["title"])
	}
	var vars []string
	for _, v := range d["templating"].(map[string]any)["list"].([]any) {
		vars = append(vars, v.(map[string]any)["name"].(string))
	}
	if !slices.Equal(vars, []string{"datasource", "namespace", "job"}) {
		t.Errorf("variables %v", vars)
	}
	for _, p := range d["panels"].([]any) {
		p := p.(map[string]any)
		if p["type"] == "row" {
			continue
		}
		if ds, _ := p["datasource"].(map[string]any); ds["uid"] != "${datasource}" {
			t.Errorf("panel %q: datasource %v, want the variable's", p["title"], p["datasource"])
		}
		if ts, _ := p["targets"].([]any); len(ts) == 0 {
			t.Errorf("panel %q has no query", p["title"])
		}
	}
	// A label the values set replaces the chart's, rather than doubling the key.
	v := monitoringValues()
	v["metrics"].(map[string]any)["grafanaDashboard"] = map[string]any{"enabled": true, "labels": map[string]any{"grafana_dashboard": "magnum"}}
	if l := objects(t, ch, "magnum-gitops", v)["ConfigMap/magnum-gitops-dashboard"].GetLabels(); l["grafana_dashboard"] != "magnum" {
		t.Errorf("labels %v, want grafana_dashboard: magnum", l)
	}
}
