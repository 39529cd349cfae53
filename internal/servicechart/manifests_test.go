package servicechart

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/internal/chartrender"
)

// TestDeployServiceGenerated: deploy/service is the chart's rendering, file for file, and
// holds no other manifest: edit the chart, then run make deploy-manifests.
func TestDeployServiceGenerated(t *testing.T) {
	t.Parallel()
	want, err := DeployManifests(root, loadChart(t))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "deploy", "service")
	have, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	for _, f := range have {
		if _, ok := want[filepath.Base(f)]; !ok {
			t.Errorf("%s is not generated from the chart: remove it, or render it from the chart", f)
		}
	}
	for name, w := range want {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(got) != w {
			t.Errorf("deploy/service/%s differs from the chart's rendering (%v): run make deploy-manifests", name, err)
		}
	}
}

// TestDeployServiceNamespaceFirst: kubectl apply -f deploy/service/ reads the files in
// name order; the Namespace must come before every object in it, on a fresh cluster too.
func TestDeployServiceNamespaceFirst(t *testing.T) {
	t.Parallel()
	files, err := DeployManifests(root, loadChart(t))
	if err != nil {
		t.Fatal(err)
	}
	// flux-system (the reconcile request's Role) comes with Flux, before magnum-gitops.
	ours := map[string]bool{}
	for _, f := range files {
		objs, err := chartrender.Parse(strings.NewReader(f))
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			ours[o.GetName()] = ours[o.GetName()] || o.GetKind() == "Namespace"
		}
	}
	created := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		objs, _ := chartrender.Parse(strings.NewReader(files[name]))
		for _, o := range objs {
			if ns := o.GetNamespace(); ours[ns] && !created[ns] {
				t.Errorf("%s: %s %s comes before its Namespace %s", name, o.GetKind(), o.GetName(), ns)
			}
			if o.GetKind() == "Namespace" {
				created[o.GetName()] = true
			}
		}
	}
	if !created[DeployNamespace] {
		t.Errorf("deploy/service creates no Namespace %s", DeployNamespace)
	}
}
