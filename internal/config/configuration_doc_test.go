package config

import (
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// docKeyShape is a key as docs/configuration.md's reference tables spell it: dotted json
// names, a list's entries as name[] and a map's keys as <what>
// (`management_clusters[].name`, `registries.auth.<registry>.username`).
var docKeyShape = regexp.MustCompile("^`([a-z0-9_]+(?:\\[\\])?(?:\\.(?:<[a-z_-]+>|[a-z0-9_]+(?:\\[\\])?))*)`$")

// docKey is one row of a reference table: the key as configKeys names it (no [] and no
// <what>), the row's line number, and how the doc wrote it.
type docKey struct {
	key, written string
	line         int
}

// docKeys reads the reference tables of a Markdown document: every table whose header's
// first cell is "key" documents one key per row, named alone in its first cell as a code
// span. Other tables are left alone. A row of a reference table whose first cell is not
// one key is a problem, so a misspelt row cannot silently document nothing.
func docKeys(doc string) (keys []docKey, problems []string) {
	reference, row := false, -1 // row: -1 outside a table, 0 its header, 1 its delimiter row
	for i, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(line, "|") {
			row = -1
			continue
		}
		row++
		first := strings.TrimSpace(strings.Split(line, "|")[1])
		if row == 0 {
			reference = first == "key"
		}
		if !reference || row < 2 {
			continue
		}
		m := docKeyShape.FindStringSubmatch(first)
		if m == nil {
			problems = append(problems, fmt.Sprintf("line %d: %q is not a key in backquotes (name[] for a list's entries, <what> for a map's keys)", i+1, first))
			continue
		}
		var parts []string
		for p := range strings.SplitSeq(m[1], ".") {
			if !strings.HasPrefix(p, "<") {
				parts = append(parts, strings.TrimSuffix(p, "[]"))
			}
		}
		keys = append(keys, docKey{key: strings.Join(parts, "."), written: m[1], line: i + 1})
	}
	return keys, problems
}

// TestDocKeys: the reference tables' parser finds keys, reads list and map placeholders,
// ignores other tables and refuses a row that names no key.
func TestDocKeys(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, doc string
		want      []string
		problems  int
	}{
		{"a reference table", "| key | default | meaning |\n|---|---|---|\n| `serve.tls.cert_file` | | x |\n| `format` | `flux` | y |\n",
			[]string{"serve.tls.cert_file", "format"}, 0},
		{"placeholders", "| key | default | |\n|---|---|---|\n| `management_clusters[].reconcile_request.name` | | |\n| `registries.auth.<registry>.password_file` | | |\n",
			[]string{"management_clusters.reconcile_request.name", "registries.auth.password_file"}, 0},
		{"another table", "| flag | default | |\n|---|---|---|\n| `--listen` | | |\n", nil, 0},
		{"two tables", "| flag | |\n|---|---|\n| `--x` | |\n\n| key | |\n|---|---|\n| `git.url` | |\n", []string{"git.url"}, 0},
		{"a row without backquotes", "| key | |\n|---|---|\n| git.url | |\n", nil, 1},
		{"two keys in one cell", "| key | |\n|---|---|\n| `git.url`, `git.branch` | |\n", nil, 1},
		{"an empty first cell", "| key | |\n|---|---|\n| | x |\n", nil, 1},
		{"upper case", "| key | |\n|---|---|\n| `Git.URL` | |\n", nil, 1},
		{"prose around a table", "`git.url` is\n\n| key | |\n|---|---|\n| `git.branch` | |\nthen `serve.listen`\n", []string{"git.branch"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			keys, problems := docKeys(tc.doc)
			var got []string
			for _, k := range keys {
				got = append(got, k.key)
			}
			if !slices.Equal(got, tc.want) || len(problems) != tc.problems {
				t.Errorf("docKeys = %q, %q; want %q and %d problems", got, problems, tc.want, tc.problems)
			}
		})
	}
}

// TestConfigurationDocNamesEveryKey: docs/configuration.md's reference tables name every
// key of the configuration type once, and no key the type does not have. A section (a
// key with keys below it) needs no row of its own: its keys have theirs.
func TestConfigurationDocNamesEveryKey(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	configKeys(reflect.TypeFor[File](), "", &keys)
	if len(keys) < 150 {
		t.Fatalf("only %d keys found in the configuration type: the walk is broken", len(keys))
	}
	documented, problems := docKeys(string(b))
	for _, p := range problems {
		t.Errorf("docs/configuration.md %s", p)
	}
	rows := map[string]docKey{}
	for _, d := range documented {
		if first, ok := rows[d.key]; ok {
			t.Errorf("docs/configuration.md line %d: %s is documented again (first on line %d)", d.line, d.written, first.line)
			continue
		}
		rows[d.key] = d
		if !slices.Contains(keys, d.key) {
			t.Errorf("docs/configuration.md line %d: %s is not a key of the configuration (internal/config File)", d.line, d.written)
		}
	}
	for _, k := range keys {
		section := slices.ContainsFunc(keys, func(o string) bool { return strings.HasPrefix(o, k+".") })
		if _, ok := rows[k]; !ok && !section {
			t.Errorf("%s: not in docs/configuration.md's reference tables", k)
		}
	}
}

// TestConfigurationDocExamplesDecode: every YAML example in docs/configuration.md is a part
// of a valid --config file, decoded as strictly as Load decodes one, so no example names a
// key that is gone.
func TestConfigurationDocExamplesDecode(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?ms)^```yaml\n(.*?)^```$").FindAllStringSubmatch(string(b), -1)
	if len(blocks) == 0 {
		t.Fatal("no YAML example found in docs/configuration.md")
	}
	for i, m := range blocks {
		if err := decodeStrict([]byte(m[1]), &File{}); err != nil {
			t.Errorf("docs/configuration.md YAML example %d: %v", i+1, err)
		}
	}
}
