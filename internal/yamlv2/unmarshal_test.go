package yamlv2

import (
	"encoding/json"
	"reflect"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestUnmarshal holds Unmarshal to sigs.k8s.io/yaml.Unmarshal, on documents the fast reader
// takes and on ones it leaves, including the library's conversions into string fields.
func TestUnmarshal(t *testing.T) {
	t.Parallel()
	type doc struct {
		Version string            `json:"version"`
		Count   int               `json:"count"`
		Values  json.RawMessage   `json:"values"`
		Labels  map[string]string `json:"labels"`
		Any     any               `json:"any"`
	}
	for _, in := range []string{
		"version: v1.2\ncount: 3\nvalues:\n  a: b\n  c:\n  - 1\nlabels:\n  x: y\nany: [1, 2]\n",
		"version: 1\ncount: 2\n",      // an int into a string field: the library's conversion
		"version: 1.10\n",             // a float into a string field, from its text
		"version: true\nany: yes\n",   // a bool into a string field
		"labels:\n  a: 1\n",           // an int into a map of strings
		"count: x\n",                  // an error for both
		"values: {a: 1}\nany: &x 1\n", // outside the fast reader
		"version: a\nversion: b\n",    // duplicate keys: Unmarshal is not strict
		"any:\n  k: |\n    x\n    y\n",
	} {
		var got, want doc
		gerr := Unmarshal([]byte(in), &got)
		werr := yaml.Unmarshal([]byte(in), &want)
		if (gerr == nil) != (werr == nil) {
			t.Fatalf("Unmarshal(%q) error %v, library's %v", in, gerr, werr)
		}
		if gerr == nil && !reflect.DeepEqual(canonicalDoc(t, got), canonicalDoc(t, want)) {
			t.Fatalf("Unmarshal(%q)\n got %+v\nwant %+v", in, got, want)
		}
	}
}

// canonicalDoc re-encodes a value so that RawMessage key order does not matter.
func canonicalDoc(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(canonical(t, b))
}
