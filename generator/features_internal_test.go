package generator

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFeatureLabelTable: the label table of docs/features.md is the one featureLabels
// gives.
func TestFeatureLabelTable(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("..", "docs", "features.md"))
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- BEGIN feature label table: generated from featureLabels, checked by TestFeatureLabelTable -->\n", "<!-- END feature label table -->"
	s := string(doc)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		t.Fatalf("docs/features.md lacks the markers %q … %q", begin, end)
	}
	var b strings.Builder
	b.WriteString("| Label | Set on | Value path | Chart versions | Default | Feature (adopted clusters) |\n|---|---|---|---|---|---|\n")
	for _, f := range featureLabels {
		feature := "always applies"
		if f.Feature != "" {
			feature = "`" + f.Feature + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s |\n", f.Name, f.Scope, f.Path, f.Charts, f.Default, feature)
	}
	if got, want := s[i+len(begin):j], b.String(); got != want {
		t.Errorf("docs/features.md's label table differs from the code; replace it with:\n%s", want)
	}
}
