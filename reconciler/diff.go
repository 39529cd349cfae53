package reconciler

import (
	"bytes"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/generator"
)

// masked is what a Secret value looks like in a diff.
const masked = "<redacted>"

// WriteDiff writes the plan as a unified diff (git diff's format, paths under a/ and b/).
// Secret files never show a value: a plaintext Secret's data and stringData values are
// masked, so the diff still says which keys changed, and an encrypted one is summarised,
// since its ciphertext says nothing to a reviewer.
func (pl *Plan) WriteDiff(w io.Writer) error {
	for _, p := range pl.Paths() {
		before, after := pl.Old[p], pl.Changes[p]
		if strings.HasPrefix(path.Base(p), generator.SecretFilePrefix) {
			if strings.HasSuffix(p, ".sops.yaml") {
				fmt.Fprintf(w, "diff --git a/%s b/%s\n", p, p)
				switch {
				case before == nil:
					fmt.Fprintf(w, "new encrypted Secret %s (values not shown)\n", p)
				case after == nil:
					fmt.Fprintf(w, "deleted encrypted Secret %s\n", p)
				default:
					fmt.Fprintf(w, "encrypted Secret %s changed (values not shown)\n", p)
				}
				continue
			}
			if keys := changedKeys(before, after); before != nil && after != nil && len(keys) > 0 {
				fmt.Fprintf(w, "diff --git a/%s b/%s\nSecret %s: values of %s changed (not shown)\n", p, p, p, strings.Join(keys, ", "))
			}
			before, after = maskSecret(before), maskSecret(after)
			if bytes.Equal(before, after) {
				continue
			}
		}
		from, to := "a/"+p, "b/"+p
		if before == nil {
			from = "/dev/null"
		}
		if after == nil {
			to = "/dev/null"
		}
		text, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
			A: difflib.SplitLines(string(before)), B: difflib.SplitLines(string(after)),
			FromFile: from, ToFile: to, Context: 3,
		})
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "diff --git a/%s b/%s\n%s", p, p, text); err != nil {
			return err
		}
	}
	return nil
}

// changedKeys lists the data and stringData keys whose values differ between two
// plaintext Secret documents.
func changedKeys(a, b []byte) []string {
	var da, db map[string]any
	if yaml.Unmarshal(a, &da) != nil || yaml.Unmarshal(b, &db) != nil {
		return nil
	}
	var out []string
	for _, section := range []string{"data", "stringData"} {
		ma, _ := da[section].(map[string]any)
		mb, _ := db[section].(map[string]any)
		for k, v := range mb {
			if w, ok := ma[k]; !ok || fmt.Sprint(w) != fmt.Sprint(v) {
				out = append(out, section+"."+k)
			}
		}
		for k := range ma {
			if _, ok := mb[k]; !ok {
				out = append(out, section+"."+k)
			}
		}
	}
	slices.Sort(out)
	return out
}

// maskSecret replaces every value of a plaintext Secret's data and stringData with a
// marker. A document that does not parse is masked whole: better to show nothing.
func maskSecret(b []byte) []byte {
	if b == nil {
		return nil
	}
	var doc map[string]any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return []byte(masked + "\n")
	}
	for _, k := range []string{"data", "stringData"} {
		if m, ok := doc[k].(map[string]any); ok {
			for key := range m {
				m[key] = masked
			}
		}
	}
	out, err := yaml.Marshal(doc)
	if err != nil {
		return []byte(masked + "\n")
	}
	return out
}
