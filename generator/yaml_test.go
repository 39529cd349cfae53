package generator

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"

	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/fixtures"
)

// fixtureObjects renders every fixture event in both formats, plus the site overlay, and
// returns every object the file layout serialises.
func fixtureObjects(t testing.TB) map[string]any {
	t.Helper()
	names, err := fixtures.EventNames()
	if err != nil {
		t.Fatal(err)
	}
	overlay := DefaultConfig()
	data, err := os.ReadFile(filepath.Join("..", "fixtures", "config", "site-overlay.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, &overlay); err != nil {
		t.Fatal(err)
	}
	flux, argo := DefaultConfig(), DefaultConfig()
	argo.Format = FormatArgo
	cfgs := map[string]*Config{"flux": &flux, "argo": &argo, "overlay": &overlay}
	objs := map[string]any{}
	for _, name := range names {
		raw, err := fixtures.Events.ReadFile("events/" + name)
		if err != nil {
			t.Fatal(err)
		}
		for cname, cfg := range cfgs {
			ev, err := v1alpha1.DecodeEvent(raw)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			res, err := Render(ev, MustSite(*cfg))
			if err != nil {
				t.Fatalf("%s (%s): %v", name, cname, err)
			}
			id := name + "/" + cname + "/"
			o := res.Objects
			if o.Namespace != nil {
				objs[id+"namespace"] = o.Namespace
			}
			if o.Source != nil {
				objs[id+"source"] = o.Source
			}
			if o.HelmRelease != nil {
				objs[id+"helmrelease"] = o.HelmRelease
			}
			if o.Application != nil {
				objs[id+"application"] = o.Application.Object
			}
			for _, s := range o.Secrets {
				objs[id+"secret-"+s.Name] = s
			}
			if res.Values != nil {
				objs[id+"values"] = res.Values
			}
			secretFiles := map[string]bool{"secret-a.yaml": true, "secret-b.sops.yaml": true}
			objs[id+"kustomization"] = kustomization(secretFiles, HelmReleaseFile)
			objs[id+"kustomization-delete"] = kustomization(secretFiles, "")
		}
	}
	return objs
}

// referenceYAML is how the repository's files were written before go.yaml.in/yaml/v3
// wrote them: the object's JSON as a map, without creationTimestamp and an empty status
// when clean, through sigs.k8s.io/yaml.JSONToYAML (go.yaml.in/yaml/v2); with clean false
// it is sigs.k8s.io/yaml.Marshal.
func referenceYAML(t testing.TB, j []byte, clean bool) []byte {
	t.Helper()
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(j))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		t.Fatalf("reference: %v", err)
	}
	if clean {
		if md, ok := m["metadata"].(map[string]any); ok {
			delete(md, "creationTimestamp")
		}
		if st, ok := m["status"].(map[string]any); ok && len(st) == 0 {
			delete(m, "status")
		}
	}
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	y, err := yaml.JSONToYAML(out)
	if err != nil {
		t.Fatalf("reference: %v", err)
	}
	return y
}

// TestMarshalObjectKeepsBytes holds the serialiser to the bytes the repository's files
// already hold, on every object of every fixture: a new build must not rewrite a file
// for its form alone.
func TestMarshalObjectKeepsBytes(t *testing.T) {
	objs := fixtureObjects(t)
	if len(objs) < 100 {
		t.Fatalf("only %d objects", len(objs))
	}
	for id, obj := range objs {
		j, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		want := referenceYAML(t, j, true)
		got, err := MarshalObject(obj)
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: differs from the files written before\n--- want\n%s\n--- got\n%s", id, want, got)
		}
		if got, err := MarshalObjectJSON(j); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: MarshalObjectJSON differs from MarshalObject (%v)", id, err)
		}
		if got, err := marshalYAML(obj); err != nil || !bytes.Equal(got, referenceYAML(t, j, false)) {
			t.Errorf("%s: marshalYAML differs from sigs.k8s.io/yaml.Marshal (%v)\n%s", id, err, got)
		}
	}
}

// TestMarshalObjectCases pins the form of what matters to a YAML reader: quoting of
// strings it would take for something else, numbers, block scalars, empty collections,
// indentation, key order. v2 is what the files held before (referenceYAML) where that
// differs: a long line folded at 80 columns, keys yaml v2 ordered by Go's map iteration,
// a character its reader refused.
func TestMarshalObjectCases(t *testing.T) {
	long := strings.Repeat("word ", 17) + "end"
	cases := []struct {
		name, json, want string
		v2               string // "" when the same as want; "error" when yaml v2 refused the input, "varies" when its order did
	}{
		{"keys in natural order", `{"b":1,"a10":2,"a9":3,"a":4,"A":5,"_":6,"1":7}`,
			"_: 6\n\"1\": 7\nA: 5\na: 4\na9: 3\na10: 2\nb: 1\n", ""},
		{"strings a reader takes for booleans", `{"a":"yes","b":"on","c":"N","d":"true","e":"Off"}`,
			"a: \"yes\"\nb: \"on\"\nc: \"N\"\nd: \"true\"\ne: \"Off\"\n", ""},
		{"strings a reader takes for null", `{"a":"null","b":"~","c":""}`,
			"a: \"null\"\nb: \"~\"\nc: \"\"\n", ""},
		{"strings a reader takes for numbers", `{"a":"1","b":"0x1F","c":"1.5","d":"1e3","e":"12:30","f":"1_000","g":".inf"}`,
			"a: \"1\"\nb: \"0x1F\"\nc: \"1.5\"\nd: \"1e3\"\ne: \"12:30\"\nf: \"1_000\"\ng: \".inf\"\n", ""},
		{"strings that stay plain", `{"a":"0.27.0","b":"10.0.0.0/24","c":"v1.33.7","d":"a b","e":"é"}`,
			"a: 0.27.0\nb: 10.0.0.0/24\nc: v1.33.7\nd: a b\ne: é\n", ""},
		{"indicators quoted", `{"a":"- a","b":"a: b","c":"#c","d":"'q'","e":" lead","f":"trail ","g":"*x"}`,
			"a: '- a'\nb: 'a: b'\nc: '#c'\nd: '''q'''\ne: ' lead'\nf: 'trail '\ng: '*x'\n", ""},
		{"a date quoted", `{"a":"2024-01-01"}`, "a: \"2024-01-01\"\n", ""},
		{"numbers", `{"i":1000000,"n":-0,"f":1.0,"g":1.5,"e":1e-7,"u":18446744073709551615,"big":123456789012345678901234567890,"inf":1e400}`,
			"big: 1.2345678901234568e+29\ne: 1e-07\nf: 1\ng: 1.5\ni: 1000000\ninf: 1e400\n\"n\": 0\nu: 18446744073709551615\n", ""},
		{"booleans and null", `{"t":true,"f":false,"n":null}`, "f: false\n\"n\": null\nt: true\n", ""},
		{"PEM as a literal block", `{"ca":"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"}`,
			"ca: |\n  -----BEGIN CERTIFICATE-----\n  MIIB\n  -----END CERTIFICATE-----\n", ""},
		{"a literal block without a final newline", `{"a":"x\ny"}`, "a: |-\n  x\n  y\n", ""},
		{"a literal block with a leading space", `{"a":" x\ny\n"}`, "a: |2\n   x\n  y\n", ""},
		{"a tab in a multi-line string double-quoted", `{"a":"\tx\ny","b":"x\n\ty"}`, "a: \"\\tx\\ny\"\nb: \"x\\n\\ty\"\n", ""},
		{"a multi-line key", `{"a\nb":1}`, "? |-\n  a\n  b\n: 1\n", ""},
		{"empty collections in flow", `{"a":{},"b":[],"c":[[]],"d":[{}]}`, "a: {}\nb: []\nc:\n- []\nd:\n- {}\n", ""},
		{"sequences flush with their key", `{"a":[{"b":1,"c":[1,2]},[3]]}`, "a:\n- b: 1\n  c:\n  - 1\n  - 2\n- - 3\n", ""},
		{"creationTimestamp and an empty status dropped", `{"metadata":{"creationTimestamp":null,"name":"x"},"status":{}}`,
			"metadata:\n  name: x\n", ""},
		{"a status that says something kept", `{"status":{"a":1}}`, "status:\n  a: 1\n", ""},
		{"a long line not folded", `{"a":"` + long + `"}`, "a: " + long + "\n",
			"a: word word word word word word word word word word word word word word word word\n  word end\n"},
		{"keys yaml v2 ordered by chance", `{"x9a":1,"x90":2,"x10":3}`, "x9a: 1\nx10: 3\nx90: 2\n", "varies"},
		// Both libraries write the key << plain, which a reader takes for a merge key.
		{"the key << plain, as before", `{"<<":1,"a":"<<"}`, "<<: 1\na: <<\n", ""},
		{"DEL escaped", `{"a":"\u007f"}`, "a: \"\\x7F\"\n", "error"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := MarshalObjectJSON([]byte(tc.json))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
			roundTrip(t, []byte(tc.json), got)
			want := cmp.Or(tc.v2, tc.want)
			if want == "error" || want == "varies" {
				return
			}
			if v2 := referenceYAML(t, []byte(tc.json), true); string(v2) != want {
				t.Errorf("yaml v2 wrote\n%s\nthe case says\n%s", v2, want)
			}
		})
	}
}

// TestMarshalObjectRejects checks that what is not a JSON object, or holds a key no YAML
// reader would read back, is an error, not a document.
func TestMarshalObjectRejects(t *testing.T) {
	for _, doc := range []string{`[1]`, `"a"`, `1`, `{"a":`, ``} {
		if b, err := MarshalObjectJSON([]byte(doc)); err == nil {
			t.Errorf("%q: got %q, want an error", doc, b)
		}
	}
	// yaml v3 would write this key as a literal block that no reader takes.
	for _, doc := range []string{`{"\tx\ny":1}`, `{"a":[{"b\n\t":1}]}`} {
		if b, err := MarshalObjectJSON([]byte(doc)); !errors.Is(err, v1alpha1.ErrInvalidInput) {
			t.Errorf("%q: got %q, %v; want an error wrapping ErrInvalidInput", doc, b, err)
		}
	}
	if b, err := MarshalObject(nil); err != nil || string(b) != "null\n" {
		t.Errorf("nil: got %q, %v", b, err)
	}
}

// plainData is a decoded document as data to compare: numbers as float64, or as their
// text when no float64 holds them.
func plainData(v any) any {
	switch x := v.(type) {
	case json.Number:
		if f, err := strconv.ParseFloat(string(x), 64); err == nil {
			return f
		}
		return string(x)
	case map[string]any:
		for k, e := range x {
			x[k] = plainData(e)
		}
	case []any:
		for i, e := range x {
			x[i] = plainData(e)
		}
	}
	return v
}

// decodeData decodes a JSON document, its numbers as json.Number.
func decodeData(t *testing.T, j []byte) map[string]any {
	t.Helper()
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(j))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		t.Fatalf("%s: %v", j, err)
	}
	return m
}

// hasMergeKey reports whether a key << is anywhere in v: the YAML libraries write it
// plain, and a reader takes it for a merge key (TestMarshalObjectCases).
func hasMergeKey(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if k == "<<" || hasMergeKey(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if hasMergeKey(e) {
				return true
			}
		}
	}
	return false
}

// roundTrip checks that a YAML reader (go.yaml.in/yaml/v3) reads from out the data of the
// JSON object in, less what MarshalObject drops.
func roundTrip(t *testing.T, in, out []byte) {
	t.Helper()
	want := decodeData(t, in)
	if hasMergeKey(want) {
		return
	}
	if md, ok := want["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	if st, ok := want["status"].(map[string]any); ok && len(st) == 0 {
		delete(want, "status")
	}
	var read any
	if err := yamlv3.Unmarshal(out, &read); err != nil {
		t.Fatalf("reading back %q: %v", out, err)
	}
	j, err := json.Marshal(read)
	if err != nil {
		t.Fatalf("reading back %q: %v", out, err)
	}
	if w, g := plainData(want), plainData(decodeData(t, j)); !reflect.DeepEqual(w, g) {
		t.Fatalf("%s read back as\n%v\nwant\n%v\nfrom\n%s", in, g, w, out)
	}
}

// marshalSeeds are documents that reach the corners of the YAML scalar rules.
func marshalSeeds() []string {
	strs := []string{
		"", " ", "a", "true", "True", "yes", "Y", "n", "on", "OFF", "null", "Null", "~", "<<",
		".inf", "-.Inf", ".nan", ".5", "1", "-1", "+1", "0x1F", "0o17", "017", "1_000", "0b101", "-0b101",
		"1.5", "1e3", "1E+3", "-.5e-3", "1.", "12:30", "1:20:30.5", "-1:30", "2024-01-01",
		"2024-1-2T03:04:05Z", "2024-01-01 10:00:00", "2024-13-01", "1.33.7", "10.0.0.0/24",
		"3e9b7c52-1d4a-4f8e", "0.27.0", "123456789012345678901234567890", "18446744073709551615",
		"-", "--", "---", "--- a", "...", "- a", "-a", "a -", "?", "? a", "?a", ":", ": a", ":a", "a:", "a: b",
		"a:b", "a #b", "a#b", "#a", ",a", "a,b", "[a]", "{a}", "a[b]", "&a", "*a", "!a", "|a", ">a",
		"'a", "a'b", "\"a", "a\"b", "%a", "@a", "`a", "a\\b", " a", "a ", "a  b", "\ta", "a\t", "a\tb",
		"a\nb", "a\n", "a\n\n", "\n", "\n\n", "\na", " a\nb", "a \nb", "a\n b", "a\n\nb", "a\n \nb",
		"a\rb", "a\r\n", "\x00", "a\x01b", "\x1b", "\u00a0", "é", "a é b", "日本語", "😀", "a😀",
		"\ufffd", "\u00e9\n\u00e8", "<html>&", "key with spaces",
		strings.Repeat("word ", 30), strings.Repeat("x", 100), strings.Repeat("x", 85) + " y z",
		strings.Repeat("a\n", 5), "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
		"\ta\nb", "a\n\tb", " \ta\nb",
	}
	var seeds []string
	for _, s := range strs {
		q, _ := json.Marshal(s)
		seeds = append(seeds, fmt.Sprintf(`{"v":%s,"l":[%s,{"k":%s}]}`, q, q, q), fmt.Sprintf(`{%s:1}`, q))
	}
	seeds = append(seeds,
		`{}`, `{"a":{}}`, `{"a":[]}`, `{"a":[[]]}`, `{"a":[{}]}`, `{"a":[[1,2],[3]]}`, `{"a":[{"b":1,"c":[1]}]}`,
		`{"metadata":{"creationTimestamp":null,"name":"x"},"status":{}}`, `{"status":{"a":1}}`, `{"status":null}`,
		`{"a":1e400,"b":-0,"c":1.0,"d":-0.0,"e":12345678901234567890,"f":1e-7,"g":1.5e300,"h":-9223372036854775809}`,
		`{"b":1,"a":2,"a10":3,"a9":4,"a01":5,"a1":6,"A":7,"_":8,"1":9,"0":10,"-":11}`,
		`{"x9a":1,"x90":2,"x10":3}`, `{"k":1,"k":2}`, `{"a":"\ud83d\ude00"}`, `{"a":"\u007f"}`, `{"a":"\u0085"}`,
		`{"a":"\u2028"}`, `{"a":"\ufeff"}`, `[1]`, `null`, `"a"`,
		`{"`+strings.Repeat("k", 129)+`":1}`, `{"a\nb":1}`, `{"é":1}`,
		`{"a":{"b":{"c":{"d":[{"e":"f\ng"}]}}}}`,
	)
	return seeds
}

// FuzzMarshalObject checks that whatever JSON object goes in, a YAML reader reads the
// same data back.
func FuzzMarshalObject(f *testing.F) {
	for _, s := range marshalSeeds() {
		f.Add([]byte(s))
	}
	for _, obj := range fixtureObjects(f) {
		b, err := json.Marshal(obj)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(checkRoundTrip)
}

// checkRoundTrip serialises doc, when it is a JSON object, and reads it back.
func checkRoundTrip(t *testing.T, doc []byte) {
	var m map[string]any
	if json.Unmarshal(doc, &m) != nil || m == nil {
		return
	}
	out, err := MarshalObjectJSON(doc)
	if errors.Is(err, v1alpha1.ErrInvalidInput) && strings.Contains(err.Error(), "a line break and a tab") {
		return
	}
	if err != nil {
		t.Fatalf("%s: %v", doc, err)
	}
	roundTrip(t, doc, out)
}

// TestMarshalObjectSeeds runs the fuzzer's seeds without the fuzzer.
func TestMarshalObjectSeeds(t *testing.T) {
	for _, s := range marshalSeeds() {
		checkRoundTrip(t, []byte(s))
	}
}

// TestMarshalObjectRandom reads back random JSON-shaped documents built from characters
// that matter to YAML.
func TestMarshalObjectRandom(t *testing.T) {
	n := 3000
	if testing.Short() {
		n = 300
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range n {
		doc, err := json.Marshal(randomObject(r, 0))
		if err != nil {
			t.Fatal(err)
		}
		checkRoundTrip(t, doc)
	}
}

var randomRunes = []rune("aAzZ09 _-.:#,?[]{}&*!|>'\"%@`\\/\n\t\rxy+~<=é日😀\u00a0\x00\x1b\x7f\u0085\u2028\ufeff")

func randomString(r *rand.Rand) string {
	switch r.IntN(8) {
	case 0:
		words := []string{"", "true", "no", "null", "~", "1", "-1", "0x10", "1e5", "1.5", "1:30", "2024-01-01",
			"<<", "---", "- a", "a: b", " a", "a ", "0.27.0", "1_0", "0b11", ".5", "+.inf"}
		return words[r.IntN(len(words))]
	case 1:
		return strings.Repeat("ab ", r.IntN(40))
	}
	runes := randomRunes
	var b strings.Builder
	for n := r.IntN(12); n > 0; n-- {
		b.WriteRune(runes[r.IntN(len(runes))])
	}
	return b.String()
}

func randomKey(r *rand.Rand) string {
	if r.IntN(10) == 0 {
		return randomString(r)
	}
	const alpha = "abAB019._-/"
	var b strings.Builder
	for n := 1 + r.IntN(6); n > 0; n-- {
		b.WriteByte(alpha[r.IntN(len(alpha))])
	}
	return b.String()
}

func randomValue(r *rand.Rand, depth int) any {
	k := r.IntN(10)
	if depth > 4 && k >= 7 {
		k = r.IntN(7)
	}
	switch k {
	case 0:
		return nil
	case 1:
		return r.IntN(2) == 0
	case 2:
		nums := []string{"0", "-0", "1", "-17", "1.0", "1.5", "-0.0", "1e3", "1E-7", "1e400", "9223372036854775807",
			"9223372036854775808", "18446744073709551616", "123.456e78", "0.1"}
		return json.Number(nums[r.IntN(len(nums))])
	case 3, 4, 5, 6:
		return randomString(r)
	case 7, 8:
		return randomObject(r, depth+1)
	default:
		l := make([]any, r.IntN(4))
		for i := range l {
			l[i] = randomValue(r, depth+1)
		}
		return l
	}
}

func randomObject(r *rand.Rand, depth int) map[string]any {
	m := map[string]any{}
	for n := r.IntN(6); n > 0; n-- {
		m[randomKey(r)] = randomValue(r, depth)
	}
	return m
}
