package v1alpha1

import (
	"os"
	"strings"
	"testing"
)

// TestToJSONFastPath: JSON documents skip the YAML parser but keep every rule of ToJSON.
func TestToJSONFastPath(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat(`{"a":`, MaxDepth+1) + "1" + strings.Repeat("}", MaxDepth+1)
	for _, tc := range []struct {
		name, doc string
		fast      bool   // accepted by the JSON path as it is
		err       string // "" for no error
	}{
		{"object", `{"id":"e1","cluster":{"uuid":"u","labels":{"a":"1"}},"node_groups":[{"name":"x"},{"name":"y"}]}`, true, ""},
		{"leading space", " \n\t{\"id\": \"e1\"}\n", true, ""},
		{"duplicate key", `{"operation":"create_cluster","operation":"delete_cluster"}`, false, "twice"},
		{"nested duplicate", `{"cluster":{"name":"a","name":"b"}}`, false, "twice"},
		{"same key in sibling objects", `{"a":{"k":1},"b":{"k":2},"c":[{"k":1},{"k":2}]}`, true, ""},
		{"too deep", deep, false, "levels deep"},
		{"second document", `{"id":"a"}{"id":"b"}`, false, "one document"},
		{"trailing text", `{"id":"a"} x`, false, "one document"},
		{"yaml comment after", "{\"id\": \"a\"} # note\n", false, ""},
		{"yaml flow mapping", `{id: a}`, false, ""},
		{"yaml second document", "{\"id\": \"a\"}\n---\nid: b\n", false, "one document"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			j, err := ToJSON([]byte(tc.doc))
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("ToJSON: %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("ToJSON: %v, want an error with %q", err, tc.err)
			}
			if tc.fast && string(j) != tc.doc {
				t.Errorf("the JSON path changed the document: %s", j)
			}
		})
	}
}

// BenchmarkDecodeEventJSON decodes an event as the event API receives it (JSON), beside
// BenchmarkDecodeEventYAML, the same event as a YAML file.
func BenchmarkDecodeEventJSON(b *testing.B) { benchDecode(b, true) }

// BenchmarkDecodeEventYAML decodes the fixture event as YAML.
func BenchmarkDecodeEventYAML(b *testing.B) { benchDecode(b, false) }

func benchDecode(b *testing.B, asJSON bool) {
	data, err := os.ReadFile("../../fixtures/events/01-prod-a-create.yaml")
	if err != nil {
		b.Fatal(err)
	}
	if asJSON {
		if data, err = ToJSON(data); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeEvent(data); err != nil {
			b.Fatal(err)
		}
	}
}
