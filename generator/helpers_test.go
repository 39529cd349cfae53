package generator_test

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/internal/fixturetest"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/fixtures"
	"github.com/magnum-gitops/magnum-gitops/generator"
)

var update = flag.Bool("update", false, "rewrite golden files under fixtures/golden")

// fixtureEvent decodes one embedded fixture event.
func fixtureEvent(t testing.TB, name string) *v1alpha1.ClusterEvent {
	t.Helper()
	return fixturetest.Event(t, name)
}

func fixtureNames(t testing.TB) []string {
	t.Helper()
	names, err := fixtures.EventNames()
	if err != nil {
		t.Fatal(err)
	}
	if len(names) < 20 {
		t.Fatalf("only %d fixture events", len(names))
	}
	return names
}

func defaultConfig() *generator.Config {
	c := generator.DefaultConfig()
	return &c
}

// redactedSecrets encodes Secrets for golden files with the private parts masked: golden
// files are committed, and no secret value belongs in Git in clear, fake or not.
var redactedSecrets = &generator.SecretEncoding{Suffix: ".yaml", Encode: redact}

func redact(s *corev1.Secret) ([]byte, error) {
	c := s.DeepCopy()
	for k, v := range c.StringData {
		switch k {
		case "tls.key":
			c.StringData[k] = "<redacted>"
		case "clouds.yaml":
			var doc map[string]any
			if err := yaml.Unmarshal([]byte(v), &doc); err != nil {
				return nil, err
			}
			auth := doc["clouds"].(map[string]any)["openstack"].(map[string]any)["auth"].(map[string]any)
			auth["application_credential_secret"] = "<redacted>"
			b, err := yaml.Marshal(doc)
			if err != nil {
				return nil, err
			}
			c.StringData[k] = string(b)
		}
	}
	return generator.MarshalObject(c)
}

// checkGolden compares got with the golden file, or rewrites it under -update.
func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	path = filepath.Join("..", "fixtures", "golden", path)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./generator -update to create it)", err)
	}
	if string(want) != string(got) {
		t.Errorf("%s differs from the golden file (run go test ./generator -update if the change is intended)\n%s",
			path, lineDiff(string(want), string(got)))
	}
}

// lineDiff shows the first differing lines, enough to see what changed.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var out []string
	for i := 0; i < len(w) || i < len(g); i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			out = append(out, "line "+itoa(i+1)+":\n  want: "+a+"\n  got:  "+b)
			if len(out) == 5 {
				break
			}
		}
	}
	return strings.Join(out, "\n")
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

func readFixture(name string) ([]byte, error) { return fixtures.Events.ReadFile("events/" + name) }

// fixtureResult renders a fixture and returns its result.
func fixtureResult(t *testing.T, name string) *generator.Result {
	t.Helper()
	res, err := render(fixtureEvent(t, name), defaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// renderValues renders fixture 01 after mutate and returns its values as plain JSON data.
func renderValues(t *testing.T, mutate func(*v1alpha1.ClusterEvent, *generator.Config)) map[string]any {
	t.Helper()
	ev := fixtureEvent(t, "01-prod-a-create.yaml")
	cfg := defaultConfig()
	if mutate != nil {
		mutate(ev, cfg)
	}
	res, err := render(ev, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return jsonData(t, res.Values)
}

func jsonData(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func at(v map[string]any, path string) any {
	var cur any = v
	for _, k := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[k]
	}
	return cur
}

func has(v map[string]any, path string) bool {
	parts := strings.Split(path, ".")
	m, ok := at(v, strings.Join(parts[:len(parts)-1], ".")).(map[string]any)
	if len(parts) == 1 {
		m, ok = v, true
	}
	if !ok {
		return false
	}
	_, found := m[parts[len(parts)-1]]
	return found
}

func yamlData(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func mustJSONCompact(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustRead(t *testing.T, name string) []byte {
	t.Helper()
	ev := fixtureEvent(t, name) // asserts it decodes
	_ = ev
	b, err := readFixture(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func renderResult(t *testing.T, mutate func(*v1alpha1.ClusterEvent, *generator.Config)) (*generator.Result, error) {
	t.Helper()
	ev := fixtureEvent(t, "01-prod-a-create.yaml")
	cfg := defaultConfig()
	mutate(ev, cfg)
	return render(ev, cfg)
}

func chartLabel(v string) func(*v1alpha1.ClusterEvent, *generator.Config) {
	return func(ev *v1alpha1.ClusterEvent, _ *generator.Config) {
		ev.ClusterTemplate.Labels["capi_helm_chart_version"] = v
	}
}

func hasDeviation(res *generator.Result, key string) bool {
	return slices.ContainsFunc(res.Deviations, func(d generator.Deviation) bool { return d.Key == key })
}

// render validates cfg as loading a configuration does, then renders ev with it: the
// tests' configurations are built in place, and some are meant to be refused.
func render(ev *v1alpha1.ClusterEvent, cfg *generator.Config) (*generator.Result, error) {
	site, err := generator.NewSite(*cfg)
	if err != nil {
		return nil, err
	}
	return generator.Render(ev, site)
}
