package servicechart

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/common/expfmt"
)

// serveBinary is the package of the binary whose serve command exports the metrics the
// chart's alerts and dashboard query.
const serveBinary = "github.com/magnum-gitops/magnum-gitops/cmd/magnum-gitops"

// The import paths whose constructors make serve's metrics.
const (
	promPkg       = "github.com/prometheus/client_golang/prometheus"
	collectorsPkg = "github.com/prometheus/client_golang/prometheus/collectors"
)

// serveMetrics is every series name serve's /metrics can hold, read from the code: each
// metric constructed (prometheus.NewCounterVec(prometheus.CounterOpts{Name: …}) and its
// kin) in a file of this module that the binary is built from, and client_golang's Go
// runtime and process collectors wherever that code makes them. Each is made again with
// client_golang, registered into a fresh registry, gathered and written out as Prometheus
// scrapes it (the text format), so a histogram yields its _bucket, _sum and _count series as
// the real exporter names them. The code is read, not run: serve makes most of its
// vectors' series only when it first counts one (magnum_gitops_events_total{operation,
// outcome}), so a registry gathered at start would lack them, and its metrics are
// registered by unexported functions of reconciler/service and cmd/magnum-gitops. A
// metric serve makes in a way this reading does not know fails the test, naming its place.
func serveMetrics(t *testing.T) map[string]bool {
	t.Helper()
	names, err := readServeMetrics()
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// readServeMetrics reads serve's metrics once for every test of the package.
var readServeMetrics = sync.OnceValues(func() (map[string]bool, error) {
	files, err := serveFiles()
	if err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry()
	var errs []error
	for _, file := range files {
		cs, err := fileCollectors(file)
		errs = append(errs, err)
		for _, c := range cs {
			if err := reg.Register(c); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", file, err))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	families, err := reg.Gather()
	if err != nil {
		return nil, err
	}
	var text bytes.Buffer
	enc := expfmt.NewEncoder(&text, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, f := range families {
		if err := enc.Encode(f); err != nil {
			return nil, err
		}
	}
	names := map[string]bool{}
	for line := range strings.Lines(text.String()) {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, _, _ := strings.Cut(line, " ")
		name, _, _ = strings.Cut(name, "{")
		names[name] = true
	}
	return names, nil
})

// serveFiles lists the Go files of this module that the serve binary is compiled from
// (tests excluded, build constraints applied), as go list sees them.
func serveFiles() ([]string, error) {
	cmd := exec.Command("go", "list", "-deps",
		"-f", `{{if and .Module .Module.Main}}{{range .GoFiles}}{{$.Dir}}/{{.}}{{"\n"}}{{end}}{{range .CgoFiles}}{{$.Dir}}/{{.}}{{"\n"}}{{end}}{{end}}`,
		serveBinary)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -deps %s: %w\n%s", serveBinary, err, stderr.Bytes())
	}
	files := strings.Fields(string(out))
	if len(files) == 0 {
		return nil, fmt.Errorf("go list -deps %s: no file of this module", serveBinary)
	}
	return files, nil
}

// metricKinds maps client_golang's constructors to the type of metric each makes.
var metricKinds = map[string]string{
	"NewCounter": "counter", "NewCounterVec": "counter", "NewCounterFunc": "counter",
	"NewGauge": "gauge", "NewGaugeVec": "gauge", "NewGaugeFunc": "gauge",
	"NewHistogram": "histogram", "NewHistogramVec": "histogram",
	"NewSummary": "summary", "NewSummaryVec": "summary",
	"NewUntypedFunc": "untyped",
}

// collectorOf is one collector of a metric's type and name: labels, callbacks, buckets and
// objectives do not change the series names a scrape holds.
func collectorOf(kind, name string) prometheus.Collector {
	switch kind {
	case "counter":
		return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: name})
	case "gauge":
		return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: name})
	case "histogram":
		return prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: name})
	case "summary":
		return prometheus.NewSummary(prometheus.SummaryOpts{Name: name, Help: name, Objectives: map[float64]float64{0.5: 0.05}})
	}
	return prometheus.NewUntypedFunc(prometheus.UntypedOpts{Name: name, Help: name}, func() float64 { return 0 })
}

// fileCollectors reads one Go file: a collector for each metric it constructs, and
// client_golang's Go and process collectors where it makes them. A metric made in a way
// it cannot read is an error naming the place.
func fileCollectors(file string) ([]prometheus.Collector, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	prom, coll := importName(f, promPkg), importName(f, collectorsPkg)
	if prom == "" && coll == "" {
		return nil, nil
	}
	var out []prometheus.Collector
	var errs []error
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		pkg, ok := sel.X.(*ast.Ident)
		if !ok {
			return true
		}
		where := fset.Position(call.Pos())
		where.Filename = filepath.Base(filepath.Dir(file)) + "/" + filepath.Base(file)
		switch {
		case pkg.Name == prom && metricKinds[sel.Sel.Name] != "":
			name, err := optsName(prom, call)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: prometheus.%s: %w", where, sel.Sel.Name, err))
				return true
			}
			out = append(out, collectorOf(metricKinds[sel.Sel.Name], name))
		case pkg.Name == prom && sel.Sel.Name == "NewDesc":
			errs = append(errs, fmt.Errorf("%s: a metric of a custom collector (prometheus.NewDesc): teach serveMetrics its type", where))
		case pkg.Name == coll && sel.Sel.Name == "NewGoCollector" && len(call.Args) == 0:
			out = append(out, collectors.NewGoCollector())
		case pkg.Name == coll && sel.Sel.Name == "NewProcessCollector" && len(call.Args) == 1 && isEmptyLit(call.Args[0]):
			out = append(out, collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		case pkg.Name == coll:
			errs = append(errs, fmt.Errorf("%s: collectors.%s with these arguments: teach serveMetrics the metrics it makes", where, sel.Sel.Name))
		}
		return true
	})
	return out, errors.Join(errs...)
}

// importName is the name a file imports path under, or "" when it does not.
func importName(f *ast.File, path string) string {
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == path {
			if imp.Name != nil {
				return imp.Name.Name
			}
			return filepath.Base(path)
		}
	}
	return ""
}

// optsName is the full name of the metric a constructor call makes: its *Opts literal's
// Namespace, Subsystem and Name, each a string literal (or a sum of them).
func optsName(prom string, call *ast.CallExpr) (string, error) {
	if len(call.Args) == 0 {
		return "", fmt.Errorf("no options")
	}
	lit, ok := call.Args[0].(*ast.CompositeLit)
	if !ok {
		return "", fmt.Errorf("its options are no literal: the metric's name cannot be read")
	}
	if sel, ok := lit.Type.(*ast.SelectorExpr); !ok || !isIdent(sel.X, prom) || !strings.HasSuffix(sel.Sel.Name, "Opts") {
		return "", fmt.Errorf("its options are no prometheus.*Opts literal")
	}
	parts := map[string]string{}
	for _, e := range lit.Elts {
		kv, ok := e.(*ast.KeyValueExpr)
		if !ok {
			return "", fmt.Errorf("options without field names")
		}
		key, _ := kv.Key.(*ast.Ident)
		if key == nil || key.Name != "Namespace" && key.Name != "Subsystem" && key.Name != "Name" {
			continue
		}
		s, err := stringLit(kv.Value)
		if err != nil {
			return "", fmt.Errorf("%s: %w", key.Name, err)
		}
		parts[key.Name] = s
	}
	if parts["Name"] == "" {
		return "", fmt.Errorf("no Name")
	}
	return prometheus.BuildFQName(parts["Namespace"], parts["Subsystem"], parts["Name"]), nil
}

// stringLit is the value of a string literal, or of a sum of string literals.
func stringLit(e ast.Expr) (string, error) {
	switch v := e.(type) {
	case *ast.BasicLit:
		if v.Kind == token.STRING {
			return strconv.Unquote(v.Value)
		}
	case *ast.BinaryExpr:
		if v.Op == token.ADD {
			x, err := stringLit(v.X)
			if err != nil {
				return "", err
			}
			y, err := stringLit(v.Y)
			return x + y, err
		}
	case *ast.ParenExpr:
		return stringLit(v.X)
	}
	return "", fmt.Errorf("not a string literal: the metric's name cannot be read")
}

// isIdent reports whether e is the identifier name.
func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

// isEmptyLit reports whether e is a composite literal without fields (default options).
func isEmptyLit(e ast.Expr) bool {
	lit, ok := e.(*ast.CompositeLit)
	return ok && len(lit.Elts) == 0
}

// TestServeMetrics: serveMetrics finds serve's own metrics in the code, each as a scrape
// names its series (a histogram's _bucket, _sum and _count, a vector's name with no
// series counted yet), with the Go runtime's and the process's, and no series of a test.
func TestServeMetrics(t *testing.T) {
	t.Parallel()
	names := serveMetrics(t)
	for _, tc := range []struct {
		name string
		want bool
	}{
		{"magnum_gitops_events_total", true},                  // a counter vector: no series until an event
		{"magnum_gitops_health_reports_total", true},          // likewise, counted by the leader only
		{"magnum_gitops_reload_errors_total", true},           // cmd/magnum-gitops, not reconciler/service
		{"magnum_gitops_build_info", true},                    // a gauge with constant labels
		{"magnum_gitops_leader", true},                        // a gauge
		{"magnum_gitops_event_duration_seconds_bucket", true}, // a histogram's series
		{"magnum_gitops_event_duration_seconds_sum", true},
		{"magnum_gitops_event_duration_seconds_count", true},
		{"magnum_gitops_step_duration_seconds_bucket", true}, // a histogram vector's
		{"magnum_gitops_event_duration_seconds", false},      // no series of that name
		{"go_goroutines", true},                              // collectors.NewGoCollector
		{"go_gc_duration_seconds", true},                     // its summary's quantiles
		{"process_resident_memory_bytes", true},              // collectors.NewProcessCollector
		{"magnum_gitops_pushes_failed_total", false},         // serve counts no failed push
		{"magnum_gitops_clusters_past_deadline", false},      // nor clusters past a deadline
		{"up", false}, // Prometheus' own, not serve's
		{"promhttp_metric_handler_requests_total", false}, // serve's handler is not instrumented
	} {
		if names[tc.name] != tc.want {
			t.Errorf("%s exported: %v, want %v", tc.name, names[tc.name], tc.want)
		}
	}
}

// TestFileCollectors: a metric whose name the code spells out is read, under any import
// name; one whose name is computed, a custom collector's, and a configured Go collector
// are errors naming their place, so that no metric of serve goes unseen.
func TestFileCollectors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body string
		want       []string // the series names read
		err        string
	}{
		{"a histogram vector", `p.NewHistogramVec(p.HistogramOpts{Namespace: "magnum", Subsystem: "gitops", Name: "x_" + "seconds"}, []string{"step"})`,
			[]string{"magnum_gitops_x_seconds_bucket", "magnum_gitops_x_seconds_count", "magnum_gitops_x_seconds_sum"}, ""},
		{"a gauge func", `p.NewGaugeFunc(p.GaugeOpts{Name: "queue_length"}, func() float64 { return 1 })`, []string{"queue_length"}, ""},
		{"a computed name", `p.NewCounter(p.CounterOpts{Name: name})`, nil, "x.go:8:9: prometheus.NewCounter: Name: not a string literal"},
		{"options in a variable", `p.NewCounter(opts)`, nil, "its options are no literal"},
		{"a custom collector", `p.NewDesc("custom_total", "", nil, nil)`, nil, "custom collector"},
		{"a configured Go collector", `collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics())`, nil, "collectors.NewGoCollector"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			file := filepath.Join(t.TempDir(), "x.go")
			src := "package x\n\nimport (\n" +
				"\tp \"github.com/prometheus/client_golang/prometheus\"\n" +
				"\t\"github.com/prometheus/client_golang/prometheus/collectors\"\n" +
				")\n\nvar _ = " + tc.body + "\n"
			if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
				t.Fatal(err)
			}
			cs, err := fileCollectors(file)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			reg := prometheus.NewRegistry()
			var got []string
			for _, c := range cs {
				reg.MustRegister(c)
			}
			mfs, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			var text bytes.Buffer
			for _, f := range mfs {
				if _, err := expfmt.MetricFamilyToText(&text, f); err != nil {
					t.Fatal(err)
				}
			}
			for line := range strings.Lines(text.String()) {
				if name, _, _ := strings.Cut(strings.TrimSpace(line), " "); !strings.HasPrefix(name, "#") {
					name, _, _ = strings.Cut(name, "{")
					if !slices.Contains(got, name) {
						got = append(got, name)
					}
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("series %v, want %v", got, tc.want)
			}
		})
	}
}
