package v1alpha1_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
)

func fixture(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "fixtures", "events", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDecodeRefuses: hostile or careless documents are refused with the field named, and
// no error quotes a secret.
func TestDecodeRefuses(t *testing.T) {
	t.Parallel()
	good := fixture(t, "01-prod-a-create.yaml")
	before, groups, _ := strings.Cut(good, "nodegroups:")
	deepFlow := "apiVersion: " + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + "\n"
	var deepBlock strings.Builder
	for i := range 200 {
		deepBlock.WriteString(strings.Repeat(" ", i) + "k:\n")
	}
	for _, tc := range []struct {
		name, doc, field, want string
	}{
		{"duplicate operation", good + "operation: delete_cluster\n", "operation", "set twice"},
		{"duplicate key nested", strings.Replace(good, "  master_count: 3\n", "  master_count: 3\n  master_count: 5\n", 1), "cluster.master_count", "set twice"},
		{"duplicate key in a node group", before + "nodegroups:" + strings.Replace(groups, "  role: worker\n", "  role: worker\n  role: master\n", 1), "nodegroups[default-worker].role", "set twice"},
		{"duplicate key in JSON", `{"operation":"create_cluster","cluster":{"name":"a","name":"b"}}`, "cluster.name", "set twice"},
		{"negative node_count beside node groups", strings.Replace(good, "  node_count: 3\n  ", "  node_count: -4\n  ", 1), "cluster.node_count", "must not be negative"},
		{"negative master_count beside node groups", strings.Replace(good, "  master_count: 3\n", "  master_count: -1\n", 1), "cluster.master_count", "must not be negative"},
		{"second document", good + "---\n" + good, "(document 2)", "one document"},
		{"second document after a comment", good + "---\n# more\nid: x\n", "(document 2)", "one document"},
		{"a second flow mapping on the line", `{operation: create_cluster} {operation: delete_cluster}`, "(document 2)", "one document"},
		{"a second JSON object after a comment", "{\"operation\": \"create_cluster\"} # c\n{\"operation\": \"delete_cluster\"}\n", "(document 2)", "one document"},
		{"10,000-deep flow", deepFlow, "(document)", "nested more than 64 levels deep"},
		{"deep block", deepBlock.String(), "(document)", "nested more than 64 levels deep"},
		{"typo under secrets", strings.Replace(good, "  certificates:", "  certficates:", 1), "secrets", `unknown field "certficates"`},
		{"typo under resolved", strings.Replace(good, "  volume_types:", "  volume_type:", 1), "resolved", `unknown field "volume_type"`},
		{"unknown top-level key", good + "clutser: {}\n", "clutser", "unknown field"},
		{"cluster labels a list", strings.Replace(good, "  labels: {}\n", "  labels: [a]\n", 1), "cluster.labels", "labels must be a map"},
		{"a node group label a mapping", before + "nodegroups:" + strings.Replace(groups, "  labels: {}\n", "  labels: {x: {y: 1}}\n", 1), "nodegroups[default-master].labels", `label "x" must be a string`},
		{"cluster_id unlike stack_id", strings.Replace(good, "  stack_id: prod-a-2b7xq4mzkd5h\n", "  stack_id: prod-a-2b7xq4mzkd5h\n  cluster_id: prod-b-000000000000\n", 1), "cluster.cluster_id", "differs from cluster.stack_id"},
		{"anchor in a secret", strings.Replace(good, "secret: fixture-appcred-secret-NOT-REAL-7f3a", "secret: *fixture-appcred-secret-NOT-REAL-7f3a", 1), "(document)", "unknown anchor"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := v1alpha1.DecodeEvent([]byte(tc.doc))
			if !errors.Is(err, v1alpha1.ErrInvalidInput) {
				t.Fatalf("err = %v, want invalid input", err)
			}
			fields := v1alpha1.FieldErrors(err)
			if len(fields) == 0 || fields[0].Field != tc.field || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want field %s with %q", err, tc.field, tc.want)
			}
			if strings.Contains(err.Error(), "NOT-REAL") {
				t.Errorf("the error quotes a secret: %v", err)
			}
		})
	}
	if _, err := v1alpha1.DecodeEvent([]byte("---\n" + good + "...\n")); err != nil {
		t.Errorf("one document with markers: %v", err)
	}
}

// TestDecodeClusterID: Magnum's API names stack_id cluster_id from microversion 1.13 on;
// an event read from it carries cluster_id alone, and decodes with stack_id set.
func TestDecodeClusterID(t *testing.T) {
	t.Parallel()
	good := fixture(t, "01-prod-a-create.yaml")
	for _, tc := range []struct{ name, from, to, want string }{
		{"cluster_id alone", "  stack_id: prod-a-2b7xq4mzkd5h\n", "  cluster_id: prod-a-2b7xq4mzkd5h\n", "prod-a-2b7xq4mzkd5h"},
		{"both, equal", "  stack_id: prod-a-2b7xq4mzkd5h\n", "  stack_id: prod-a-2b7xq4mzkd5h\n  cluster_id: prod-a-2b7xq4mzkd5h\n", "prod-a-2b7xq4mzkd5h"},
		{"stack_id alone", "", "", "prod-a-2b7xq4mzkd5h"},
		{"neither", "  stack_id: prod-a-2b7xq4mzkd5h\n", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			doc := good
			if tc.from != "" {
				doc = strings.Replace(good, tc.from, tc.to, 1)
			}
			ev, err := v1alpha1.DecodeEvent([]byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			if ev.Cluster.StackID != tc.want {
				t.Errorf("stack_id %q, want %q", ev.Cluster.StackID, tc.want)
			}
		})
	}
}

// FuzzDecodeEvent: the decoder never panics, and what it accepts re-encodes to an event
// that decodes to the same digest-relevant content.
func FuzzDecodeEvent(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "fixtures", "events", "*.yaml"))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("a: &x [*x]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64<<10 {
			return
		}
		ev, err := v1alpha1.DecodeEvent(data)
		if err != nil {
			if !errors.Is(err, v1alpha1.ErrInvalidInput) {
				t.Fatalf("error that is not an input error: %v", err)
			}
			return
		}
		if ev.APIVersion != v1alpha1.APIVersion || ev.Kind != v1alpha1.EventKind {
			t.Fatalf("accepted a document of another kind: %s %s", ev.APIVersion, ev.Kind)
		}
	})
}

// TestDepth: a document nested MaxDepth deep is taken by both paths, JSON and YAML (a
// comment sends JSON to the YAML path), and one level more is refused by both.
func TestDepth(t *testing.T) {
	t.Parallel()
	nested := func(n int, pretty bool) string {
		var b strings.Builder
		for i := range n {
			if pretty {
				b.WriteString("\n" + strings.Repeat("  ", i))
			}
			b.WriteString(`{"k":`)
		}
		b.WriteString("1")
		b.WriteString(strings.Repeat("}", n))
		return b.String()
	}
	for _, tc := range []struct {
		name string
		doc  string
		ok   bool
	}{
		{"JSON at the limit", nested(v1alpha1.MaxDepth, false), true},
		{"JSON one deeper", nested(v1alpha1.MaxDepth+1, false), false},
		{"JSON with a comment at the limit", "# c\n" + nested(v1alpha1.MaxDepth, false), true},
		{"JSON with a comment one deeper", "# c\n" + nested(v1alpha1.MaxDepth+1, false), false},
		{"indented JSON with a comment at the limit", "# c" + nested(v1alpha1.MaxDepth, true), true},
		{"indented JSON with a comment one deeper", "# c" + nested(v1alpha1.MaxDepth+1, true), false},
		{"a flow value under a key", "a:\n  b: {c: {d: 1}}\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := v1alpha1.ToJSON([]byte(tc.doc))
			if tc.ok != (err == nil) {
				t.Errorf("ToJSON: %v, want ok %v", err, tc.ok)
			}
			if !tc.ok && (err == nil || !strings.Contains(err.Error(), "nested more than")) {
				t.Errorf("ToJSON: %v, want the depth refusal", err)
			}
		})
	}
}
