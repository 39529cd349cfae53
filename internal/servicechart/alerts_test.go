package servicechart

import (
	"encoding/json"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// The checks here need no list of serve's metrics. That every alert and dashboard query
// parses and selects only metrics a running serve exports is checked in cmd/magnum-gitops
// (alerts_test.go), which starts serve and scrapes it.

// chartAlerts are the alerts the chart's PrometheusRule holds (docs/service.md, Alerts and
// dashboard).
var chartAlerts = []string{"MagnumGitopsDown", "MagnumGitopsNoLeader", "MagnumGitopsEventsFailing",
	"MagnumGitopsPushesFailing", "MagnumGitopsHealthReportsFailing", "MagnumGitopsSecretReloadRefused",
	"MagnumGitopsClustersFailed", "MagnumGitopsResyncDrift"}

// dashboardFile is the Grafana dashboard the chart ships, relative to the chart.
const dashboardFile = "dashboards/magnum-gitops.json"

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

// TestAlertAnnotations: the chart holds exactly chartAlerts; every one has a severity, a
// summary, a description and a runbook_url into the project's docs at the release's tag,
// at a heading that exists; Prometheus' own template variables reach it unrendered by
// Helm; a runbookBaseURL replaces the base; every expression selects the release's
// namespace only.
func TestAlertAnnotations(t *testing.T) {
	t.Parallel()
	ch := loadChart(t)
	base := ch.Metadata.Home + "/blob/v" + ch.Metadata.AppVersion + "/docs/"
	rs := rules(t, objects(t, ch, "magnum-gitops", monitoringValues()))
	if got := slices.Sorted(maps.Keys(rs)); !slices.Equal(got, slices.Sorted(slices.Values(chartAlerts))) {
		t.Errorf("alerts %v, want %v", got, chartAlerts)
	}
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
		"MagnumGitopsClustersFailed":       "({{ $value }} in the largest such status)",
		"MagnumGitopsResyncDrift":          "committed {{ $value | humanize }} clusters",
	} {
		if d := rs[alert]["annotations"].(map[string]any)["description"].(string); !strings.Contains(d, want) {
			t.Errorf("%s: description %q, want Prometheus' %q", alert, d, want)
		}
	}
	other := rules(t, objects(t, ch, "magnum-gitops-all", ciValues(t, "all-options-values.yaml")))
	if url := other["MagnumGitopsDown"]["annotations"].(map[string]any)["runbook_url"]; url != "https://docs.example.org/magnum-gitops/docs/troubleshooting.md#serve-does-not-start" {
		t.Errorf("runbook_url with runbookBaseURL: %v", url)
	}
	// Each alert watches its own release only: another release's serve, in another
	// namespace, is scraped by the same Prometheus.
	for _, name := range chartAlerts {
		if expr, _ := other[name]["expr"].(string); !strings.Contains(expr, `namespace="magnum-gitops-all"`) {
			t.Errorf("%s in another namespace: %q, want it to select namespace=\"magnum-gitops-all\"", name, expr)
		}
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
