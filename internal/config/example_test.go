package config

import (
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// configKeys lists the key paths of the configuration type t, as --config spells them
// (json tags; an inline struct's keys at its parent's level), descending into maps,
// slices and pointers of this module's own types only: a section that takes another
// project's type (a Flux post-renderer) is documented by that project.
func configKeys(t reflect.Type, prefix string, out *[]string) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || !strings.HasPrefix(t.PkgPath(), "github.com/magnum-gitops/") && t.PkgPath() != "" {
		return
	}
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-" || !f.IsExported():
			continue
		case name == "" && (f.Anonymous || strings.Contains(opts, "inline")):
			configKeys(f.Type, prefix, out)
			continue
		}
		p := prefix + name
		*out = append(*out, p)
		if f.Type.Name() != "Duration" {
			configKeys(f.Type, p+".", out)
		}
	}
}

// section is the text of the example under the top-level key top: its line and the
// indented or commented lines after it, up to the next top-level key.
func section(example, top string) string {
	lines := strings.Split(example, "\n")
	start := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, top+":") })
	if start < 0 {
		return ""
	}
	end := start + 1
	for end < len(lines) && (lines[end] == "" || lines[end][0] == ' ' || lines[end][0] == '#') {
		end++
	}
	return strings.Join(lines[start:end], "\n")
}

// TestExampleHoldsEveryKey: docs/magnum-gitops.example.yaml, which says it holds every
// key, names each key of the configuration type in its section, set or commented out.
func TestExampleHoldsEveryKey(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../docs/magnum-gitops.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	example := string(b)
	var keys []string
	configKeys(reflect.TypeFor[File](), "", &keys)
	if len(keys) < 150 {
		t.Fatalf("only %d keys found in the configuration type: the walk is broken", len(keys))
	}
	for _, k := range keys {
		top, rest, nested := strings.Cut(k, ".")
		text := section(example, top)
		if !nested {
			if text == "" && !regexp.MustCompile(`(?m)^# `+regexp.QuoteMeta(top)+`:`).MatchString(example) {
				t.Errorf("%s: not in the example", k)
			}
			continue
		}
		last := rest[strings.LastIndex(rest, ".")+1:]
		if !regexp.MustCompile(`(?m)(^[ #-]*|[{,] *)` + regexp.QuoteMeta(last) + `:`).MatchString(text) {
			t.Errorf("%s: not in the example's %s section", k, top)
		}
	}
}
