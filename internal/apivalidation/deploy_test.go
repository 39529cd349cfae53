package apivalidation

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/magnum-gitops/magnum-gitops/internal/chartrender"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
)

// TestDeployManifestsAccepted keeps the copy-paste manifests of the README valid: those of
// deploy/flux and deploy/argocd, and deploy/service (rendered from the chart, whose own
// directory deploy/chart holds no manifest), each directory's files in the order kubectl
// apply -f reads them. The Namespaces they create are created; the rest is a dry run.
func TestDeployManifestsAccepted(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	files, _ := filepath.Glob(filepath.Join(testenv.RepoRoot(), "deploy", "*", "*.yaml"))
	nested, _ := filepath.Glob(filepath.Join(testenv.RepoRoot(), "deploy", "*", "*", "*.yaml")) // deploy/flux/per-namespace
	files = slices.DeleteFunc(append(files, nested...), func(f string) bool {
		return strings.HasPrefix(f, filepath.Join(testenv.RepoRoot(), "deploy", "chart")+string(filepath.Separator))
	})
	slices.Sort(files)
	if len(files) < 3 {
		t.Fatalf("found %d deploy manifests", len(files))
	}
	// Flux's and Argo CD's namespaces come with them, before these manifests.
	for _, ns := range []string{"flux-system", "argocd"} {
		if err := env.EnsureNamespace(ctx, ns); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range files {
		for _, o := range manifests(t, f) {
			if o.GetKind() == "Namespace" {
				if err := env.EnsureNamespace(ctx, o.GetName()); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if err := apply(ctx, o, client.DryRunAll); err != nil {
				t.Errorf("%s: %s rejected: %v", filepath.Base(f), o.GetKind(), err)
			}
		}
	}
}

// manifests reads the objects of a YAML file.
func manifests(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	objs, err := chartrender.Parse(fh)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return objs
}
