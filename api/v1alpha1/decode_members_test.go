package v1alpha1

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fixtureJSON returns every fixture event as the JSON the event API receives.
func fixtureJSON(t testing.TB) map[string][]byte {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "fixtures", "events", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixture events: %v", err)
	}
	docs := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		j, err := ToJSON(b)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		docs[filepath.Base(f)] = j
	}
	return docs
}

// TestDecodeMembers: decodeMembers takes the events that are as they should be, to the
// event decodeDocument makes of them, and leaves every document with a problem to it.
func TestDecodeMembers(t *testing.T) {
	t.Parallel()
	valid := `{"apiVersion":"magnum-gitops.io/v1alpha1","kind":"ClusterEvent","operation":"create_cluster","cluster":{"uuid":"u","name":"n"}}`
	type decodeCase struct {
		name, doc string
		taken     bool // by decodeMembers
	}
	cases := []decodeCase{
		{"valid", valid, true},
		{"escaped key", strings.Replace(valid, `"kind"`, `"\u006bind"`, 1), true},
		{"magnum's unknown field", strings.Replace(valid, `"name":"n"`, `"name":"n","health_status":"HEALTHY"`, 1), true},
		{"null section", strings.Replace(valid, `}}`, `},"secrets":null}`, 1), true},
		{"yaml", "apiVersion: magnum-gitops.io/v1alpha1\nkind: ClusterEvent\n", false},
		{"unknown top-level key", strings.Replace(valid, `"kind"`, `"Kind":"ClusterEvent","kind"`, 1), false},
		{"unknown key in a strict section", strings.Replace(valid, `}}`, `},"params":{"node_cuont":3}}`, 1), false},
		{"wrong type", strings.Replace(valid, `"name":"n"`, `"name":5`, 1), false},
		{"key twice", strings.Replace(valid, `"kind"`, `"operation":"create_cluster","kind"`, 1), false},
		{"wrong kind", strings.Replace(valid, `"ClusterEvent"`, `"Cluster"`, 1), false},
		{"negative count", strings.Replace(valid, `"name":"n"`, `"name":"n","node_count":-1`, 1), false},
		{"trailing document", valid + ` {}`, false},
	}
	for name, doc := range fixtureJSON(t) {
		cases = append(cases, decodeCase{name, string(doc), true})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, taken := decodeMembers([]byte(tc.doc))
			if taken != tc.taken {
				t.Fatalf("taken %v, want %v", taken, tc.taken)
			}
			want, err := decodeDocument([]byte(tc.doc))
			switch {
			case taken && err != nil:
				t.Fatalf("taken, but decodeDocument refuses it: %v", err)
			case taken:
				if d := cmp.Diff(want, got); d != "" {
					t.Errorf("decodeMembers differs from decodeDocument (-want +got):\n%s", d)
				}
			case tc.name != "yaml" && err == nil:
				t.Errorf("left to decodeDocument, which takes it: decodeMembers misses an event it should take")
			}
		})
	}
}

// FuzzDecodeMembers: whatever decodeMembers takes, decodeDocument takes too, to the same
// event.
func FuzzDecodeMembers(f *testing.F) {
	for _, doc := range fixtureJSON(f) {
		f.Add(doc)
	}
	f.Add([]byte(`{"apiVersion":"magnum-gitops.io/v1alpha1","kind":"ClusterEvent","operation":"create_cluster","cluster":{"uuid":"u","name":"n","Name":"m"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64<<10 {
			return
		}
		got, taken := decodeMembers(data)
		if !taken {
			return
		}
		want, err := decodeDocument(data)
		if err != nil {
			t.Fatalf("decodeMembers takes a document decodeDocument refuses: %v", err)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("decodeMembers differs from decodeDocument (-want +got):\n%s", d)
		}
	})
}
