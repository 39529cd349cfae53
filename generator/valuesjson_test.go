package generator

import (
	"encoding/json"
	"fmt"
	"math"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/fixtures"
)

// checkMarshalValues compares marshalValues with json.Marshal, errors included.
func checkMarshalValues(t *testing.T, name string, v map[string]any) {
	t.Helper()
	got, gotErr := marshalValues(v)
	want, wantErr := json.Marshal(v)
	if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
		t.Fatalf("%s: marshalValues error %v, json.Marshal error %v", name, gotErr, wantErr)
	}
	if string(got) != string(want) {
		t.Errorf("%s: marshalValues gives\n%s\njson.Marshal gives\n%s", name, got, want)
	}
}

func TestMarshalValues(t *testing.T) {
	t.Parallel()
	var nilMap map[string]any
	var nilList []any
	var nilPtr *int
	for name, v := range map[string]map[string]any{
		"empty":   {},
		"nil map": nil,
		"scalars": {"s": "x", "t": true, "f": false, "n": nil, "i": -42, "z": 0, "big": math.MaxInt},
		"nested": {"b": map[string]any{"z": []any{1, "a", nil, map[string]any{}}, "a": []any{}},
			"a": map[string]any{"": "empty key"}, "B": 1, "_": 2, "a.b": 3, "a-b": 4},
		"typed nils": {"m": nilMap, "l": nilList, "p": nilPtr},
		"escapes": {"html": "<b>&</b>", "quote": `"q"`, "back": `a\b`, "ctl": "a\nb\tc\x00", "del": "\x7f",
			"utf8": "Ünïcode", "sep": "\u2028\u2029", "bad": "a\xffb", "<key>": "&"},
		"other types": {"float": 1.5, "int64": int64(7), "uint": uint(8), "number": json.Number("12"),
			"strings": []string{"a", "<"}, "smap": map[string]string{"k": "v"}, "floats": []any{1e21, 1e-7, 100.0}},
		"unsupported": {"x": map[string]any{"y": math.NaN()}},
		"bad type":    {"x": []any{func() {}}},
	} {
		checkMarshalValues(t, name, v)
	}
	// Every byte, and every rune below 256, in a key and in a value.
	for c := range 256 {
		for _, ch := range []string{string([]byte{byte(c)}), string(rune(c))} {
			checkMarshalValues(t, fmt.Sprintf("%q", ch), map[string]any{"a" + ch: ch + "b"})
		}
	}
	// The values of every fixture event.
	names, err := fixtures.EventNames()
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	for _, n := range names {
		data, err := fixtures.Events.ReadFile("events/" + n)
		if err != nil {
			t.Fatal(err)
		}
		ev, err := v1alpha1.DecodeEvent(data)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Render(ev, &cfg)
		if err != nil || res.Values == nil {
			continue
		}
		checkMarshalValues(t, n, res.Values)
	}
}

// FuzzMarshalValues holds marshalValues equal to json.Marshal over values made of the
// fuzzed strings and numbers, and over any JSON object (whose numbers are floats).
func FuzzMarshalValues(f *testing.F) {
	f.Add([]byte(`{"a":[1,"b",null,{"c":true}]}`), "key", "value", 1)
	f.Add([]byte(`{"<":"\u2028"}`), "<&>", "a\xffb", -7)
	f.Fuzz(func(t *testing.T, doc []byte, key, s string, n int) {
		v := map[string]any{key: s, s: n, "l": []any{s, n, nil, true, map[string]any{s: key}},
			"m": map[string]any{key: map[string]any{s: []any{}}}}
		checkMarshalValues(t, "built", v)
		var m map[string]any
		if json.Unmarshal(doc, &m) == nil {
			checkMarshalValues(t, "decoded", m)
		}
	})
}

// BenchmarkMarshalValues encodes the first fixture event's values, as every render does,
// with marshalValues and with json.Marshal side by side.
func BenchmarkMarshalValues(b *testing.B) {
	data, err := fixtures.Events.ReadFile("events/01-prod-a-create.yaml")
	if err != nil {
		b.Fatal(err)
	}
	ev, err := v1alpha1.DecodeEvent(data)
	if err != nil {
		b.Fatal(err)
	}
	cfg := DefaultConfig()
	res, err := Render(ev, &cfg)
	if err != nil {
		b.Fatal(err)
	}
	for _, impl := range []struct {
		name    string
		marshal func(map[string]any) ([]byte, error)
	}{
		{"marshalValues", marshalValues},
		{"encoding-json", func(v map[string]any) ([]byte, error) { return json.Marshal(v) }},
	} {
		b.Run(impl.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := impl.marshal(res.Values); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
