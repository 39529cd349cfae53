package generator_test

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/fixtures"
	"github.com/magnum-gitops/magnum-gitops/generator"
)

var update = flag.Bool("update", false, "rewrite golden files under fixtures/golden")

// fixtureEvent decodes one embedded fixture event.
func fixtureEvent(t testing.TB, name string) *v1alpha1.ClusterEvent {
	t.Helper()
	data, err := fixtures.Events.ReadFile("events/" + name)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := v1alpha1.DecodeEvent(data)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return ev
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
func redactedSecrets(s *corev1.Secret, base string) (string, []byte, error) {
	c := s.DeepCopy()
	for k, v := range c.StringData {
		switch k {
		case "tls.key":
			c.StringData[k] = "<redacted>"
		case "clouds.yaml":
			var doc map[string]any
			if err := yaml.Unmarshal([]byte(v), &doc); err != nil {
				return "", nil, err
			}
			auth := doc["clouds"].(map[string]any)["openstack"].(map[string]any)["auth"].(map[string]any)
			auth["application_credential_secret"] = "<redacted>"
			b, err := yaml.Marshal(doc)
			if err != nil {
				return "", nil, err
			}
			c.StringData[k] = string(b)
		}
	}
	b, err := generator.MarshalObject(c)
	return base + ".yaml", b, err
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
	res, err := generator.Render(fixtureEvent(t, name), defaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	return res
}
