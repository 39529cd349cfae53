package v1alpha1

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
		{"duplicate once invalid UTF-8 is replaced", "{\"\xf2\":1,\"\xff\":2}", false, "twice"},
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

// TestCheckJSONMatchesTokens holds checkJSON to referenceCheckJSON, the json.Decoder token
// walk it replaced, on the fast-path cases and on every cut of them.
func TestCheckJSONMatchesTokens(t *testing.T) {
	t.Parallel()
	for _, doc := range checkJSONSeeds {
		for i := 0; i <= len(doc); i++ {
			sameCheck(t, []byte(doc[:i]))
			sameCheck(t, []byte(doc[i:]))
		}
	}
}

var checkJSONSeeds = []string{
	`{"id":"e1","cluster":{"uuid":"u","labels":{"a":"1"}},"node_groups":[{"name":"x"},{"name":"y"}]}`,
	` {"a": [1, -2.5e+3, 0, true, false, null, "x\u0041\n\"", {}, []]}  ` + "\n",
	`{"a":1,"\u0061":2}`, `{"a":{"b":1},"c":{"b":2}}`, `{"a":1} # c`, `{"a":1} {"b":2}`, `{"a":01}`, `{"a":1.}`,
	`{"a":-}`, `{"a":"\x"}`, `{"a":"` + "\x01" + `"}`, `{"a" 1}`, `{"a":1,}`, `[1]`, `{"a":[1,]}`, `{"a":tru}`,
	"{\"a\":\"\xff\"}", "{\"\xf2\":1,\"\xff\":2}",
}

func sameCheck(t *testing.T, data []byte) {
	t.Helper()
	if !isJSONObject(data) {
		return // ToJSON asks checkJSON only then
	}
	ok, err := checkJSON(data)
	rok, rerr := referenceCheckJSON(data)
	if ok != rok || (err == nil) != (rerr == nil) || err != nil && err.Error() != rerr.Error() {
		t.Fatalf("checkJSON(%q) = %v, %v; the token walk gives %v, %v", data, ok, err, rok, rerr)
	}
}

// FuzzCheckJSON holds checkJSON to the token walk on any input.
func FuzzCheckJSON(f *testing.F) {
	for _, s := range checkJSONSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { sameCheck(t, data) })
}

// referenceCheckJSON is checkJSON as a json.Decoder token walk: slower, and obviously
// encoding/json's own reading.
func referenceCheckJSON(data []byte) (ok bool, err error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	type frame struct {
		object bool
		keys   map[string]struct{}
		key    bool // in an object: the next string token is a key
	}
	var stack []frame
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return len(stack) == 0, nil
		}
		if err != nil {
			return false, nil
		}
		var top *frame
		if len(stack) > 0 {
			top = &stack[len(stack)-1]
		}
		if k, isString := tok.(string); isString && top != nil && top.object && top.key {
			// Token returns a key as a string; a duplicate must not silently win.
			if _, dup := top.keys[k]; dup {
				return true, &FieldError{Field: "(document)", Message: "a key appears twice in one mapping"}
			}
			top.keys[k] = struct{}{}
			top.key = false
			continue
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			if len(stack) >= MaxDepth {
				return true, &FieldError{Field: "(document)", Message: fmt.Sprintf("nested more than %d levels deep", MaxDepth)}
			}
			if top != nil && top.object {
				top.key = true
			}
			stack = append(stack, frame{object: tok == json.Delim('{'), keys: map[string]struct{}{}, key: tok == json.Delim('{')})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				// One value only. A YAML comment after it is YAML's business; any other
				// text is a second document (or garbage) that must not be dropped.
				rest := bytes.TrimLeft(data[dec.InputOffset():], " \t\r\n")
				switch {
				case len(rest) == 0:
					return true, nil
				case rest[0] == '#':
					return false, nil
				}
				return true, &FieldError{Field: "(document 2)", Message: "a file holds one document; found more after the JSON object"}
			}
		default:
			if top == nil {
				return false, nil // a scalar document is not an event
			}
			if top.object {
				top.key = true
			}
		}
	}
}

// BenchmarkCheckJSON checks the fixture event's JSON body for keys set twice, with
// checkJSON and with the token walk of encoding/json's decoder side by side.
func BenchmarkCheckJSON(b *testing.B) {
	data, err := os.ReadFile("../../fixtures/events/01-prod-a-create.yaml")
	if err != nil {
		b.Fatal(err)
	}
	if data, err = ToJSON(data); err != nil {
		b.Fatal(err)
	}
	for _, impl := range []struct {
		name  string
		check func([]byte) (bool, error)
	}{{"checkJSON", checkJSON}, {"json-token-walk", referenceCheckJSON}} {
		b.Run(impl.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if ok, err := impl.check(data); !ok || err != nil {
					b.Fatal(ok, err)
				}
			}
		})
	}
}
