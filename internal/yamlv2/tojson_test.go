package yamlv2

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// sameAsLibrary checks ToJSON against sigs.k8s.io/yaml.YAMLToJSONStrict: when the reader
// takes a document, the library must take it too and give the same values.
func sameAsLibrary(t testing.TB, data []byte) (ok bool) {
	t.Helper()
	got, ok := ToJSON(data)
	if !ok {
		return false
	}
	want, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		t.Fatalf("ToJSON took %q, the library refuses it: %v", data, err)
	}
	if !bytes.Equal(canonical(t, got), canonical(t, want)) {
		t.Fatalf("ToJSON(%q)\n got %s\nwant %s", data, got, want)
	}
	return true
}

// canonical decodes JSON (numbers as written) and encodes it again with sorted keys.
func canonical(t testing.TB, j []byte) []byte {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(j))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("invalid JSON %s: %v", j, err)
	}
	if d.More() {
		t.Fatalf("trailing data after JSON %s", j)
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestToJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in string
		ok       bool
	}{
		{"mapping", "a: b\nc: 1\n", true},
		{"nested", "a:\n  b:\n    c: d\n  e: f\ng: h\n", true},
		{"indentless sequence", "a:\n- 1\n- x\nb: c\n", true},
		{"indented sequence", "a:\n  - 1\n  - x\nb: c\n", true},
		{"sequence of mappings", "- a: 1\n  b: 2\n-   c: 3\n    d: [] \n", true},
		{"top sequence", "- a\n- b\n", true},
		{"nested dash block", "-\n  a: 1\n- null\n-\n", true},
		{"null values", "a:\nb: ~\nc: null\nd: Null\n", true},
		{"bools", "a: true\nb: no\nc: On\nd: Y\ne: FALSE\n", true},
		{"ints", "a: 0\nb: -12\nc: 9223372036854775807\n", true},
		{"strings that look like numbers", "a: 1.2.3\nb: 3e9b7c52-1d4a\nc: 10.0.0.0/24\nd: v1.27.4\ne: 0.27.0\n", true},
		{"quoted", "a: \"x: y # z\"\nb: 'it''s'\nc: \"\\t\\x41\\u00e9\\U0001F600\\\"\\\\\\N\\_\\L\\P\\e\\0\\ \\'\"\nd: ''\n", true},
		{"quoted keys", "\"a b\": 1\n'c': 2\n\"\": 3\n", true},
		{"empty flows", "a: {}\nb: []\n", true},
		{"comments", "# top\na: 1\n  # indented\nb:\n# between\n  c: 2\n", true},
		{"colons and hashes inside", "url: https://x.org:5000/v3\nk: a#b\ns: a:b\n", true},
		{"literal clip", "a: |\n  line 1\n\n   line 2\n\n\nb: 1\n", true},
		{"literal strip", "a: |-\n  x\n  y\n\nb: 1\n", true},
		{"literal keep", "a: |+\n  x\n\n\nb: 1\n", true},
		{"literal with comment-like content", "a: |\n  # not a comment\n  b: c\n", true},
		{"literal leading blank lines", "a: |\n\n  x\n", true},
		{"literal in sequence", "- |\n  x\n- y\n", true},
		{"literal in compact mapping", "- a: |\n    x\n  b: y\n", true},
		{"literal content with tab", "a: |\n  x\n  \ty\n", true},
		{"literal starting with tab", "a: |\n  \tx\n", false},
		{"unicode", "a: é ü 日本\n", true},
		{"spaces around", "a:    b   \n", true},

		{"float", "a: 1.5\n", false},
		{"hex", "a: 0x1F\n", false},
		{"underscores", "a: 1_000\n", false},
		{"octal-looking", "a: 012\n", false},
		{"minus zero", "a: -0\n", false},
		{"plus sign", "a: +1\n", false},
		{"too big", "a: 9223372036854775808\n", false},
		{"timestamp", "a: 2024-01-01\n", false},
		{"inf", "a: .inf\n", false},
		{"flow mapping", "a: {b: c}\n", false},
		{"flow sequence", "a: [1, 2]\n", false},
		{"anchor", "a: &x 1\nb: *x\n", false},
		{"tag", "a: !!str 1\n", false},
		{"merge key", "<<: {}\n", false},
		{"int key", "1: a\n", false},
		{"bool key", "yes: a\n", false},
		{"duplicate", "a: 1\na: 2\n", false},
		{"folded", "a: >\n  x\n", false},
		{"indentation indicator", "a: |2\n   x\n", false},
		{"empty literal", "a: |\nb: 1\n", false},
		{"multi-line plain", "a: b\n  c\n", false},
		{"multi-line quoted", "a: \"b\n  c\"\n", false},
		{"trailing comment", "a: b # c\n", false},
		{"comment after quoted", "a: 'b' # c\n", false},
		{"comment after colon", "a: # c\n  b: 1\n", false},
		{"tab indentation", "a:\n\tb: 1\n", false},
		{"tab after colon", "a:\tb\n", false},
		{"CRLF", "a: b\r\n", false},
		{"no final line break", "a: b", false},
		{"BOM", "\ufeffa: b\n", false},
		{"document marker", "---\na: b\n", false},
		{"two documents", "a: b\n---\nc: d\n", false},
		{"document end", "- a\n...\n", false},
		{"scalar document", "hello\n", false},
		{"empty document", "# nothing\n", false},
		{"indented top", "  a: b\n", false},
		{"nested value", "a: b: c\n", false},
		{"compact nested sequence", "- - a\n  - b\n- - - c\n", true},
		{"compact nested sequence of mappings", "k:\n- - a: 1\n    b: 2\n  - c\n", true},
		{"bad indentation", "a:\n    b: 1\n  c: 2\n", false},
		{"unknown escape", "a: \"\\q\"\n", false},
		{"surrogate escape", "a: \"\\ud800\"\n", false},
		{"json slash escape", "a: \"\\/\"\n", false},
		{"control character", "a: b\x01\n", false},
		{"invalid UTF-8", "a: \xff\n", false},
		{"C1 control", "a: \u0085\n", false},
		{"question key", "? a\n: b\n", false},
		{"scalar under key", "a:\n  b\n", false},
		{"blank literal line with extra spaces", "a: |\n  x\n     \n  y\n", false},
		{"space before colon", "a : b\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if ok := sameAsLibrary(t, []byte(tt.in)); ok != tt.ok {
				t.Fatalf("ToJSON(%q) ok = %v, want %v", tt.in, ok, tt.ok)
			}
		})
	}
}

// TestToJSONFixtures runs every document of the repository's YAML fixtures through both
// readers. What magnum-gitops writes itself (the generator's golden output, records) and
// the fixture events must all take the fast path: that is where the time goes.
func TestToJSONFixtures(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..", "fixtures")
	var docs, fast int
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".yaml") {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		mustBeFast := strings.Contains(p, filepath.Join("fixtures", "golden")) || strings.Contains(p, filepath.Join("fixtures", "events"))
		for i, doc := range documents(data) {
			docs++
			switch {
			case sameAsLibrary(t, doc):
				fast++
			case mustBeFast:
				t.Errorf("%s, document %d: ToJSON does not take it\n%s", p, i+1, doc)
			default:
				t.Logf("%s, document %d: left to the library", p, i+1)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d of %d documents took the fast path", fast, docs)
}

// documents splits a multi-document file at its "---" lines, dropping comment-only ones.
func documents(data []byte) [][]byte {
	var out [][]byte
	for _, d := range bytes.Split(append([]byte("\n"), data...), []byte("\n---\n")) {
		d = bytes.TrimPrefix(d, []byte("\n"))
		content := false
		for _, l := range bytes.Split(d, []byte("\n")) {
			if t := bytes.TrimSpace(l); len(t) > 0 && t[0] != '#' {
				content = true
			}
		}
		if content {
			if d[len(d)-1] != '\n' {
				d = append(d, '\n')
			}
			out = append(out, d)
		}
	}
	return out
}

// FuzzToJSON holds the reader to the library: whatever it takes, the library takes too,
// with the same values.
func FuzzToJSON(f *testing.F) {
	for _, s := range []string{
		"a: b\nc:\n- 1\n- d: |\n    x\n    y\n  e: 'f'\n", "a: \"\\x41\\u00e9\"\nb: |+\n  x\n\n", "- a\n-\n  b: ~\n",
		"a: {}\nb: []\nc: yes\nd: -5\n", "a: |-\n  # x\n\n  y\nb: c\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sameAsLibrary(t, data)
	})
}

// TestToJSONReadsTheEmitter: whatever go-yaml v2 writes for JSON-shaped data (sigs.k8s.io/yaml.Marshal,
// as the generator and the records do) takes the fast path, and reads back as the library
// reads it. Random documents: nested mappings and sequences of strings chosen to hit the
// emitter's styles (plain, quoted, literal blocks, strings that look like other types),
// ints, bools and nulls. Floats are left out: the reader leaves them to the library.
func TestToJSONReadsTheEmitter(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(11, 12))
	strs := []string{"", "a", "a b", "yes", "No", "on", "null", "~", "1", "-1", "0x1F", "1.5", "1e3", "2024-01-01",
		"12:30", "a: b", "a #b", "#c", "- x", "@x", "'q'", "\"d\"", "x\ny", "x\n", "\nx", "x\n\n", "  lead", "trail  ",
		"tab\there", "é ü", "{a}", "[b]", "a,b", "*x", "&y", "!z", "%p", "|", ">", "?", ":", "-", "---", "...",
		"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n", "3e9b7c52-1d4a-4f8e-9b6c-2a7d5e8f1c03",
		"v1.27.4", "10.0.0.0/24", "https://x.org:5000/v3", "<<", "=", "\\", "x\\ny", "\u00a0", "\x01", "line 1\n  line 2\n"}
	// The emitter writes a key with a line break as a complex key ("? |-"), the empty key
	// as nothing, "<<" plain (which a reader takes for a merge), and a string that starts
	// with a line break or a space and has one with an indentation indicator ("|2-"): all
	// are left to the library, and left out here.
	var keys []string
	for _, s := range strs {
		if !strings.Contains(s, "\n") && s != "" && s != "<<" {
			keys = append(keys, s)
		}
	}
	strs = slices.DeleteFunc(strs, func(s string) bool {
		return strings.Contains(s, "\n") && (s[0] == '\n' || s[0] == ' ')
	})
	var value func(depth int) any
	value = func(depth int) any {
		switch n := r.IntN(10); {
		case n < 3 && depth < 5:
			m := map[string]any{}
			for k := r.IntN(4); k > 0; k-- {
				m[keys[r.IntN(len(keys))]] = value(depth + 1)
			}
			return m
		case n < 5 && depth < 5:
			var l []any
			for k := r.IntN(4); k > 0; k-- {
				l = append(l, value(depth+1))
			}
			if l == nil {
				return []any{}
			}
			return l
		case n == 5:
			return r.Int64N(1<<40) - 1<<39
		case n == 6:
			return r.IntN(2) == 0
		case n == 7:
			return nil
		}
		return strs[r.IntN(len(strs))]
	}
	for i := 0; i < 3000; i++ {
		doc := map[string]any{"k": value(0)}
		data, err := yaml.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		if !sameAsLibrary(t, data) {
			t.Fatalf("ToJSON leaves the emitter's output to the library:\n%s", data)
		}
	}
}
