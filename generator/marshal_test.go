package generator

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"

	corev1 "k8s.io/api/core/v1"
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
			res, err := Render(ev, cfg)
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

// TestMarshalObjectMatchesReference holds the fast serialiser to the reference path on
// every object of every fixture, and requires that it did not fall back for any of them.
func TestMarshalObjectMatchesReference(t *testing.T) {
	objs := fixtureObjects(t)
	if len(objs) < 100 {
		t.Fatalf("only %d objects", len(objs))
	}
	for id, obj := range objs {
		want, err := marshalObjectReference(obj)
		if err != nil {
			t.Fatalf("%s: reference: %v", id, err)
		}
		got, err := marshalObjectFast(obj)
		if err != nil {
			t.Errorf("%s: fast path: %v", id, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: fast path differs from the reference\n--- want\n%s\n--- got\n%s", id, want, got)
		}
		if got, _ := MarshalObject(obj); !bytes.Equal(got, want) {
			t.Errorf("%s: MarshalObject differs from the reference", id)
		}
		if j, err := json.Marshal(obj); err != nil {
			t.Fatal(err)
		} else if got, _ := MarshalObjectJSON(j); !bytes.Equal(got, want) {
			t.Errorf("%s: MarshalObjectJSON differs from the reference", id)
		}
		want, err = yaml.Marshal(obj)
		if err != nil {
			t.Fatalf("%s: yaml.Marshal: %v", id, err)
		}
		got, err = marshalFast(obj, false)
		if err != nil {
			t.Errorf("%s: fast path (yaml.Marshal): %v", id, err)
		} else if !bytes.Equal(got, want) {
			t.Errorf("%s: fast path differs from yaml.Marshal\n--- want\n%s\n--- got\n%s", id, want, got)
		}
		if s, ok := obj.(*corev1.Secret); ok && s.StringData["clouds.yaml"] != "" {
			var doc map[string]any
			if err := yaml.Unmarshal([]byte(s.StringData["clouds.yaml"]), &doc); err != nil {
				t.Fatal(err)
			}
			if want, _ := yaml.Marshal(doc); string(want) != s.StringData["clouds.yaml"] {
				t.Errorf("%s: clouds.yaml differs from yaml.Marshal\n--- want\n%s\n--- got\n%s", id, want, s.StringData["clouds.yaml"])
			}
		}
	}
}

// TestMarshalObjectConcurrent uses the pooled buffers from several goroutines at once.
func TestMarshalObjectConcurrent(t *testing.T) {
	objs := fixtureObjects(t)
	want := map[string][]byte{}
	for id, obj := range objs {
		b, err := marshalObjectReference(obj)
		if err != nil {
			t.Fatal(err)
		}
		want[id] = b
	}
	errs := make(chan string, 4)
	for g := 0; g < 4; g++ {
		go func() {
			bad := ""
			for id, obj := range objs {
				if got, err := MarshalObject(obj); err != nil || !bytes.Equal(got, want[id]) {
					bad = id
				}
			}
			errs <- bad
		}()
	}
	for g := 0; g < 4; g++ {
		if bad := <-errs; bad != "" {
			t.Errorf("%s differs when marshalled concurrently", bad)
		}
	}
}

// checkAgainstReference compares the two paths on one JSON document. The fast path may
// decline (errSlowPath); when it answers, the answer must be the reference's.
func checkAgainstReference(t *testing.T, doc []byte) (fast bool) {
	t.Helper()
	obj := json.RawMessage(doc)
	want, werr := marshalObjectReference(obj)
	got, gerr := marshalObjectFast(obj)
	if errors.Is(gerr, errSlowPath) {
		return false
	}
	if gerr != nil || werr != nil {
		if gerr == nil || werr == nil {
			t.Fatalf("errors differ on %s: fast %v, reference %v", doc, gerr, werr)
		}
		return false
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("fast path differs from the reference on %s\n--- want\n%s\n--- got\n%s", doc, want, got)
	}
	final, err := MarshalObject(obj)
	if err != nil || !bytes.Equal(final, want) {
		t.Fatalf("MarshalObject differs from the reference on %s", doc)
	}
	// The same without dropping anything, against sigs.k8s.io/yaml.Marshal.
	want, werr = yaml.Marshal(obj)
	got, gerr = marshalFast(obj, false)
	if errors.Is(gerr, errSlowPath) {
		return true
	}
	if gerr != nil || werr != nil {
		t.Fatalf("yaml.Marshal: errors differ on %s: fast %v, reference %v", doc, gerr, werr)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("fast path differs from yaml.Marshal on %s\n--- want\n%s\n--- got\n%s", doc, want, got)
	}
	return true
}

// marshalSeeds are documents that reach the corners of the YAML scalar rules.
func marshalSeeds() []string {
	var strs []string
	for _, s := range []string{
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
	} {
		strs = append(strs, s)
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
	f.Fuzz(func(t *testing.T, doc []byte) {
		if !json.Valid(doc) {
			return
		}
		checkAgainstReference(t, doc)
	})
}

// TestMarshalObjectSeeds runs the seeds without the fuzzer, and checks the fast path
// answers for most of them (so the comparison is not vacuous).
func TestMarshalObjectSeeds(t *testing.T) {
	fast := 0
	seeds := marshalSeeds()
	for _, s := range seeds {
		if checkAgainstReference(t, []byte(s)) {
			fast++
		}
	}
	t.Logf("fast path answered %d of %d seeds", fast, len(seeds))
	if fast < len(seeds)*3/4 {
		t.Errorf("fast path answered only %d of %d seeds", fast, len(seeds))
	}
}

// TestMarshalObjectRandom compares the two paths on random JSON-shaped documents built
// from characters that matter to YAML.
func TestMarshalObjectRandom(t *testing.T) {
	n := 3000
	if testing.Short() {
		n = 300
	}
	for _, mild := range []bool{false, true} {
		r := rand.New(rand.NewPCG(1, 2))
		fast := 0
		for i := 0; i < n; i++ {
			doc, err := json.Marshal(randomObject(r, 0, mild))
			if err != nil {
				t.Fatal(err)
			}
			if checkAgainstReference(t, doc) {
				fast++
			}
		}
		t.Logf("mild=%v: fast path answered %d of %d documents", mild, fast, n)
		if want := map[bool]int{false: n / 2, true: n * 9 / 10}[mild]; fast < want {
			t.Errorf("mild=%v: fast path answered only %d of %d documents", mild, fast, n)
		}
	}
}

var randomRunes = []rune("aAzZ09 _-.:#,?[]{}&*!|>'\"%@`\\/\n\t\rxy+~<=é日😀\u00a0\x00\x1b\u0085\u2028\ufeff")

// mildRunes leave out what always sends a document to the reference path.
var mildRunes = []rune("aAzZ09 _-.:#,?[]{}&*!|>'\"%@`\\/\n\t\rxy+~<=é日😀\u00a0\x00\x1b")

func randomString(r *rand.Rand, mild bool) string {
	switch r.IntN(8) {
	case 0:
		words := []string{"", "true", "no", "null", "~", "1", "-1", "0x10", "1e5", "1.5", "1:30", "2024-01-01",
			"<<", "---", "- a", "a: b", " a", "a ", "0.27.0", "1_0", "0b11", ".5", "+.inf"}
		return words[r.IntN(len(words))]
	case 1:
		if !mild && r.IntN(4) == 0 {
			return strings.Repeat("ab ", r.IntN(40))
		}
		return strings.Repeat("ab ", r.IntN(20))
	}
	runes := randomRunes
	if mild {
		runes = mildRunes
	}
	var b strings.Builder
	for n := r.IntN(12); n > 0; n-- {
		b.WriteRune(runes[r.IntN(len(runes))])
	}
	return b.String()
}

func randomKey(r *rand.Rand, mild bool) string {
	if !mild && r.IntN(10) == 0 {
		return randomString(r, mild)
	}
	const alpha = "abAB019._-/"
	var b strings.Builder
	for n := 1 + r.IntN(6); n > 0; n-- {
		b.WriteByte(alpha[r.IntN(len(alpha))])
	}
	return b.String()
}

func randomValue(r *rand.Rand, depth int, mild bool) any {
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
		return randomString(r, mild)
	case 7, 8:
		return randomObject(r, depth+1, mild)
	default:
		l := make([]any, r.IntN(4))
		for i := range l {
			l[i] = randomValue(r, depth+1, mild)
		}
		return l
	}
}

func randomObject(r *rand.Rand, depth int, mild bool) map[string]any {
	m := map[string]any{}
	for n := r.IntN(6); n > 0; n-- {
		m[randomKey(r, mild)] = randomValue(r, depth, mild)
	}
	return m
}

// TestKeyLess holds the byte version of the key order to sorter.go's rune version.
func TestKeyLess(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const alpha = "aAzZ0019._-/~ "
	gen := func() string {
		var b strings.Builder
		for n := r.IntN(7); n > 0; n-- {
			b.WriteByte(alpha[r.IntN(len(alpha))])
		}
		return b.String()
	}
	for i := 0; i < 200000; i++ {
		a, b := gen(), gen()
		if got, want := keyLess([]byte(a), []byte(b)), referenceKeyLess(a, b); got != want {
			t.Fatalf("keyLess(%q, %q) = %v, want %v", a, b, got, want)
		}
	}
}

// referenceKeyLess is go.yaml.in/yaml/v2 sorter.go keyList.Less for two strings.
func referenceKeyLess(a, b string) bool {
	ar, br := []rune(a), []rune(b)
	for i := 0; i < len(ar) && i < len(br); i++ {
		if ar[i] == br[i] {
			continue
		}
		al := unicode.IsLetter(ar[i])
		bl := unicode.IsLetter(br[i])
		if al && bl {
			return ar[i] < br[i]
		}
		if al || bl {
			return bl
		}
		var ai, bi int
		var an, bn int64
		if ar[i] == '0' || br[i] == '0' {
			for j := i - 1; j >= 0 && unicode.IsDigit(ar[j]); j-- {
				if ar[j] != '0' {
					an = 1
					bn = 1
					break
				}
			}
		}
		for ai = i; ai < len(ar) && unicode.IsDigit(ar[ai]); ai++ {
			an = an*10 + int64(ar[ai]-'0')
		}
		for bi = i; bi < len(br) && unicode.IsDigit(br[bi]); bi++ {
			bn = bn*10 + int64(br[bi]-'0')
		}
		if an != bn {
			return an < bn
		}
		if ai != bi {
			return ai < bi
		}
		return ar[i] < br[i]
	}
	return len(ar) < len(br)
}

// BenchmarkRenderFilesSerialiser is BenchmarkRenderFiles (the prod-a create, Secrets in
// plaintext) with each serialiser, in one run: the port in this file, and the library path
// (marshalObjectReference: sigs.k8s.io/yaml over go.yaml.in/yaml/v2). The render's target
// is ≤ 200 µs; the port stays only while the library path misses it (docs/benchmarks.md).
func BenchmarkRenderFilesSerialiser(b *testing.B) {
	raw, err := fixtures.Events.ReadFile("events/01-prod-a-create.yaml")
	if err != nil {
		b.Fatal(err)
	}
	ev, err := v1alpha1.DecodeEvent(raw)
	if err != nil {
		b.Fatal(err)
	}
	cfg := DefaultConfig()
	for _, tc := range []struct {
		name    string
		marshal func(string, any) ([]byte, error)
	}{
		{"port", nil},
		{"library", func(_ string, obj any) ([]byte, error) { return marshalObjectReference(obj) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				res, err := Render(ev, &cfg)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := res.Files(&cfg, FileOptions{Secrets: PlaintextSecrets, Marshal: tc.marshal}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
