package generator_test

import (
	"bytes"
	"path"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/generator"
)

// TestSuspend: FileOptions.Suspend writes every fixture's HelmRelease with spec.suspend:
// true (its Application without automated sync) and changes no other file, nor the
// Result; without it nothing says suspend. SetSuspended turns the file of one into the
// file of the other, byte for byte, both ways, and leaves a file in the state asked for
// as it is: the suspend command's commit is what the next render writes.
func TestSuspend(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		format string
		// suspended reports whether a deploy file's object is suspended.
		suspended func(t *testing.T, obj map[string]any) bool
	}{
		{generator.FormatFlux, func(t *testing.T, obj map[string]any) bool {
			s, ok, _ := unstructured.NestedBool(obj, "spec", "suspend")
			return ok && s
		}},
		{generator.FormatArgo, func(t *testing.T, obj map[string]any) bool {
			if _, ok, _ := unstructured.NestedSlice(obj, "spec", "syncPolicy", "syncOptions"); !ok {
				t.Error("the sync options went with the automated sync")
			}
			_, automated, _ := unstructured.NestedMap(obj, "spec", "syncPolicy", "automated")
			return !automated
		}},
	} {
		t.Run(tc.format, func(t *testing.T) {
			t.Parallel()
			cfg := defaultConfig()
			cfg.Format = tc.format
			rendered := 0
			for _, name := range fixtureNames(t) {
				ev := fixtureEvent(t, name)
				if ev.Operation == v1alpha1.DeleteCluster {
					continue
				}
				res, err := render(ev, cfg)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				before := string(mustJSON(t, res.Values))
				plain, err := res.Files(cfg, generator.FileOptions{Secrets: redactedSecrets})
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				susp, err := res.Files(cfg, generator.FileOptions{Secrets: redactedSecrets, Suspend: true})
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if string(mustJSON(t, res.Values)) != before || (res.Objects.HelmRelease != nil && res.Objects.HelmRelease.Spec.Suspend) {
					t.Fatalf("%s: a suspended render changed the Result", name)
				}
				deploy := path.Join(generator.ClusterDir(res.Root, res.Namespace, res.ReleaseName), cfg.DeployFile())
				for p, b := range plain.Files {
					if p != deploy && !bytes.Equal(susp.Files[p], b) {
						t.Errorf("%s: suspending changed %s", name, p)
					}
				}
				if len(susp.Files) != len(plain.Files) {
					t.Errorf("%s: %d files suspended, %d not", name, len(susp.Files), len(plain.Files))
				}
				for _, f := range []struct {
					file []byte
					want bool
				}{{plain.Files[deploy], false}, {susp.Files[deploy], true}} {
					var obj map[string]any
					if err := yaml.Unmarshal(f.file, &obj); err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					if got := tc.suspended(t, obj); got != f.want {
						t.Errorf("%s: suspended %v, want %v:\n%s", name, got, f.want, f.file)
					}
				}
				if tc.format == generator.FormatFlux && strings.Contains(string(plain.Files[deploy]), "suspend") {
					t.Errorf("%s: a cluster not suspended says suspend:\n%s", name, plain.Files[deploy])
				}
				for _, c := range []struct {
					from    []byte
					suspend bool
					want    []byte
				}{
					{plain.Files[deploy], true, susp.Files[deploy]},
					{susp.Files[deploy], false, plain.Files[deploy]},
					{susp.Files[deploy], true, susp.Files[deploy]},
					{plain.Files[deploy], false, plain.Files[deploy]},
				} {
					got, err := generator.SetSuspended(c.from, c.suspend)
					if err != nil {
						t.Fatalf("%s: SetSuspended(%v): %v", name, c.suspend, err)
					}
					if !bytes.Equal(got, c.want) {
						t.Errorf("%s: SetSuspended(%v):\n%s\nwant\n%s", name, c.suspend, got, c.want)
					}
				}
				rendered++
			}
			if rendered < 10 {
				t.Fatalf("only %d fixtures rendered", rendered)
			}
		})
	}
}

// TestSetSuspendedRefuses: a file that deploys nothing is refused, not rewritten.
func TestSetSuspendedRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, file, says string }{
		{"a kustomization", "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [helmrelease.yaml]\n", "no spec"},
		{"a Secret", "apiVersion: v1\nkind: Secret\nmetadata: {name: x}\nspec: {}\n", `a "Secret"`},
		{"not YAML", "spec: [\n", "deploy file"},
		{"a list", "- kind: HelmRelease\n", "not a Kubernetes object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := generator.SetSuspended([]byte(tc.file), true); err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("err = %v, want one saying %q", err, tc.says)
			}
		})
	}
}
