package v1alpha1

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
)

// TestToJSONFastPath: JSON documents skip the YAML parser but keep every rule of ToJSON.
func TestToJSONFastPath(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat(`{"a":`, MaxDepth+1) + "1" + strings.Repeat("}", MaxDepth+1)
	deepest := strings.Repeat(`{"a":`, MaxDepth) + "1" + strings.Repeat("}", MaxDepth)
	for _, tc := range []struct {
		name, doc string
		fast      bool   // accepted by the JSON path as it is
		err       string // "" for no error
	}{
		{"object", `{"id":"e1","cluster":{"uuid":"u","labels":{"a":"1"}},"node_groups":[{"name":"x"},{"name":"y"}]}`, true, ""},
		{"leading space", " \n\t{\"id\": \"e1\"}\n", true, ""},
		{"duplicate key", `{"operation":"create_cluster","operation":"delete_cluster"}`, false, "twice"},
		{"nested duplicate", `{"cluster":{"name":"a","name":"b"}}`, false, "twice"},
		{"duplicate once invalid UTF-8 is replaced", "{\"\xf2\":1,\"\xff\":2}", false, "twice"},
		{"same key in sibling objects", `{"a":{"k":1},"b":{"k":2},"c":[{"k":1},{"k":2}]}`, true, ""},
		{"too deep", deep, false, "levels deep"},
		{"as deep as allowed", deepest, true, ""},
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

// TestCheckJSONAgreesWithYAML holds checkJSON to the YAML path it lets JSON skip, on the
// fast-path cases and on every cut of them (sameDecision).
func TestCheckJSONAgreesWithYAML(t *testing.T) {
	t.Parallel()
	for _, doc := range checkJSONSeeds {
		for i := 0; i <= len(doc); i++ {
			sameDecision(t, []byte(doc[:i]))
			sameDecision(t, []byte(doc[i:]))
		}
	}
}

var checkJSONSeeds = []string{
	`{"id":"e1","cluster":{"uuid":"u","labels":{"a":"1"}},"node_groups":[{"name":"x"},{"name":"y"}]}`,
	` {"a": [1, -2.5e+3, 0, true, false, null, "x\u0041\n\"", {}, []]}  ` + "\n",
	`{"a":1,"\u0061":2}`, `{"a":{"b":1},"c":{"b":2}}`, `{"a":1} # c`, `{"a":1} {"b":2}`, `{"a":01}`, `{"a":1.}`,
	`{"a":-}`, `{"a":"\x"}`, `{"a":"` + "\x01" + `"}`, `{"a" 1}`, `{"a":1,}`, `[1]`, `{"a":[1,]}`, `{"a":tru}`,
	"{\"a\":\"\xff\"}", "{\"\xf2\":1,\"\xff\":2}", "\t{\"a\":\t[1,\t2]}\t", "{\"a\"\r\n:0}",
	`{"a":` + strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth) + `}`,
}

// yamlPath is ToJSON without its JSON path: a comment line before the document makes
// isJSONObject false and changes nothing YAML reads.
func yamlPath(data []byte) ([]byte, error) {
	return ToJSON(append([]byte("#\n"), data...))
}

// sameDecision: what checkJSON decides, the YAML path decides too. A document it
// accepts, the YAML path accepts, to the same value, unless YAML cannot read it (yamlSyntax:
// JSON takes invalid UTF-8, DEL, a lone surrogate escape, a key longer than 1024
// characters); one it refuses for a key set twice or nesting too deep, the YAML path
// refuses, with the same error where YAML reads it; the YAML path's estimate of nesting
// counts one level more than there is (atDepthLimit). Where it falls back, the YAML path
// decides by construction. The YAML path reads the document written compactly
// (json.Compact): YAML refuses some of JSON's white space (a tab at the start of a line, a
// line break between a key and its colon).
//
// Text after the object is where the two part: the YAML path reads the first flow mapping
// and drops what follows it (`{"a":1} x`), so checkJSON refuses it on its own: the object
// is one JSON value encoding/json decodes, and what follows is neither blank nor a comment.
func sameDecision(t *testing.T, data []byte) {
	t.Helper()
	if !isJSONObject(data) {
		return // ToJSON asks checkJSON only for an object
	}
	ok, err := checkJSON(data)
	if !ok {
		if err != nil {
			t.Fatalf("checkJSON(%q) falls back with an error: %v", data, err)
		}
		return
	}
	if fe := (*FieldError)(nil); errors.As(err, &fe) && fe.Field == "(document 2)" {
		dec := json.NewDecoder(bytes.NewReader(data))
		var first json.RawMessage
		derr := dec.Decode(&first)
		rest := bytes.TrimLeft(data[dec.InputOffset():], " \t\r\n")
		if derr != nil || len(rest) == 0 || rest[0] == '#' {
			t.Fatalf("checkJSON(%q) finds a second document after %s (%v), followed by %q", data, first, derr, rest)
		}
		if fok, ferr := checkJSON(first); !fok || ferr != nil {
			t.Fatalf("checkJSON(%q) finds a second document after %s, which it does not accept alone: %v, %v", data, first, fok, ferr)
		}
		return
	}
	asYAML := data
	var compact bytes.Buffer
	if json.Compact(&compact, data) == nil {
		asYAML = compact.Bytes()
	}
	j, yerr := yamlPath(asYAML)
	switch {
	case err == nil && yerr != nil && !yamlSyntax(yerr) && !atDepthLimit(data, yerr):
		t.Fatalf("checkJSON accepts %q; the YAML path refuses it: %v", data, yerr)
	case err == nil && yerr == nil:
		if !json.Valid(data) {
			t.Fatalf("checkJSON accepts %q, which is not JSON", data)
		}
		var fast, slow any
		if json.Unmarshal(data, &fast) != nil {
			return // a number no float64 holds: nothing to compare
		}
		if uerr := json.Unmarshal(j, &slow); uerr != nil || !reflect.DeepEqual(fast, slow) {
			t.Fatalf("checkJSON accepts %q; the YAML path reads it as %s (%v)", data, j, uerr)
		}
	case err == nil:
		if !json.Valid(data) {
			t.Fatalf("checkJSON accepts %q, which is not JSON", data)
		}
	case yerr == nil:
		t.Fatalf("checkJSON refuses %q (%v); the YAML path accepts it", data, err)
	case json.Valid(data) && !yamlSyntax(yerr):
		// ToJSON names the key set twice the same way on both paths. (In a document
		// that is not JSON further on, checkJSON stops at the first key set twice,
		// the YAML parser at its syntax error.)
		if _, ferr := ToJSON(asYAML); ferr.Error() != yerr.Error() {
			t.Fatalf("%q: ToJSON says %v; the YAML path %v", data, ferr, yerr)
		}
	}
}

// atDepthLimit reports whether the YAML path refused data, which checkJSON accepts, as too
// deep because it is nested exactly MaxDepth deep: one level more, and checkJSON refuses it.
func atDepthLimit(data []byte, yerr error) bool {
	_, err := checkJSON(append(append([]byte(`{"":`), data...), '}'))
	return strings.Contains(yerr.Error(), "levels deep") && err != nil && strings.Contains(err.Error(), "levels deep")
}

// yamlSyntax reports whether the YAML path refused a document because YAML cannot read it,
// not for one of ToJSON's rules (a key set twice, nesting, a second document).
func yamlSyntax(err error) bool {
	var fe *FieldError
	return errors.As(err, &fe) && fe.Field == "(document)" &&
		strings.HasPrefix(fe.Message, "not valid YAML or JSON: ") && !strings.Contains(fe.Message, "already set in map")
}

// FuzzCheckJSON holds checkJSON to the YAML path on any input.
func FuzzCheckJSON(f *testing.F) {
	for _, s := range checkJSONSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 16<<10 {
			return // the YAML path is slow, and a big input finds nothing a small one does not
		}
		sameDecision(t, data)
	})
}

// BenchmarkCheckJSON checks the fixture event's JSON body for keys set twice.
func BenchmarkCheckJSON(b *testing.B) {
	data, err := os.ReadFile("../../fixtures/events/01-prod-a-create.yaml")
	if err != nil {
		b.Fatal(err)
	}
	if data, err = ToJSON(data); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if ok, err := checkJSON(data); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}
