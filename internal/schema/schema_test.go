package schema_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/internal/schema"
)

// root is the module's root: the tests run there, as the schemas read the types' doc
// comments from the working directory.
const root = "."

func TestMain(m *testing.M) {
	if err := os.Chdir("../.."); err != nil {
		panic(err)
	}
	os.Exit(m.Run())
}

// TestPublished: docs/schemas holds exactly what the types give (make schemas writes it).
func TestPublished(t *testing.T) {
	t.Parallel()
	for name, gen := range schema.Documents {
		want, err := gen()
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(root, "docs", "schemas", name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("docs/schemas/%s is not what the types give (%v): run make schemas", name, err)
		}
	}
}

// compile compiles a published schema with a real JSON Schema validator.
func compile(t *testing.T, name string) *jsonschema.Schema {
	t.Helper()
	b, err := schema.Documents[name]()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(name, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(name)
	if err != nil {
		t.Fatalf("%s does not compile: %v", name, err)
	}
	return s
}

// instance is a YAML document as the validator takes it.
func instance(t *testing.T, data []byte) any {
	t.Helper()
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestConfigSchema: the example configuration (every key) and the chart's rendered
// configuration validate; a misspelt key, a key of the wrong type and a forge without its
// token are refused, as Load refuses them.
func TestConfigSchema(t *testing.T) {
	t.Parallel()
	s := compile(t, "magnum-gitops-config.schema.json")
	example, err := os.ReadFile(filepath.Join(root, "docs", "magnum-gitops.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(instance(t, example)); err != nil {
		t.Errorf("docs/magnum-gitops.example.yaml: %v", err)
	}
	for _, tc := range []struct {
		name, doc string
		ok        bool
	}{
		{"durations and lists", "serve: {listen: 127.0.0.1:8443, group: {max_wait: 250ms}}\nmanagement_clusters: [{name: east, path: clusters/east}]\n", true},
		{"a misspelt key", "serve: {listne: 127.0.0.1:8443}\n", false},
		{"an unknown section", "servce: {}\n", false},
		{"a number for a string", "git: {url: 42}\n", false},
		{"a duration that is not one", "serve: {group: {max_wait: soon}}\n", false},
		{"a forge without its token", "git: {review: {gitea: {url: https://g, owner: o, repo: r}}}\n", false},
	} {
		err := s.Validate(instance(t, []byte(tc.doc)))
		if (err == nil) != tc.ok {
			t.Errorf("%s: %v, want valid %v", tc.name, err, tc.ok)
		}
	}
}

// TestClusterEventSchema: every event fixture validates; an unknown operation's type, a
// misspelt field and an event without its cluster are refused.
func TestClusterEventSchema(t *testing.T) {
	t.Parallel()
	s := compile(t, "cluster-event.schema.json")
	files, err := filepath.Glob(filepath.Join(root, "fixtures", "events", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no event fixtures: %v", err)
	}
	var first []byte
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = data
		}
		if err := s.Validate(instance(t, data)); err != nil {
			t.Errorf("%s: %v", filepath.Base(f), err)
		}
	}
	var ev map[string]any
	if err := yaml.Unmarshal(first, &ev); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		patch func(map[string]any)
	}{
		{"a misspelt field", func(e map[string]any) { e["clustre"] = e["cluster"] }},
		{"no cluster", func(e map[string]any) { delete(e, "cluster") }},
		{"a count as text", func(e map[string]any) { e["cluster"].(map[string]any)["node_count"] = "three" }},
	} {
		e := map[string]any{}
		b, _ := json.Marshal(ev)
		_ = json.Unmarshal(b, &e)
		tc.patch(e)
		b, _ = json.Marshal(e)
		if err := s.Validate(instance(t, b)); err == nil || strings.TrimSpace(err.Error()) == "" {
			t.Errorf("%s: valid, want refused", tc.name)
		}
	}
}
