package apivalidation

import (
	"bytes"
	"context"
	"os"
	"path"
	"path/filepath"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/internal/chartrender"
	"github.com/magnum-gitops/magnum-gitops/internal/fixturetest"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
)

// TestArgoKustomizeApplicationAccepted applies the Application of a cluster with chart
// patches in Argo mode (a kustomize source with spec.source.kustomize.patches, the
// end-to-end tests' CAPD post-renderers) against Argo CD's Application CRD and reads it
// back whole: no field of it is pruned as unknown.
func TestArgoKustomizeApplicationAccepted(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	cfg := generator.DefaultConfig()
	cfg.Format = generator.FormatArgo
	cfg.Argo.RepoURL, cfg.Argo.TargetRevision = "https://git.example.org/cloud/magnum-clusters.git", "main"
	doc, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "fixtures", "postrenderers", "capd-inmemory.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var prs []helmv2.PostRenderer
	if err := yaml.UnmarshalStrict(doc, &prs); err != nil {
		t.Fatal(err)
	}
	cfg.Flux.PostRenderers = prs
	if err := env.EnsureNamespace(ctx, cfg.Argo.Namespace); err != nil {
		t.Fatal(err)
	}
	site, err := generator.NewSite(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := generator.Render(fixturetest.Event(t, "01-prod-a-create.yaml"), site)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := res.Files(&cfg, generator.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := path.Join(generator.ClusterDir(res.Root, res.Namespace, res.ReleaseName), generator.ApplicationFile)
	objs, err := chartrender.Parse(bytes.NewReader(fs.Files[p]))
	if err != nil || len(objs) != 1 {
		t.Fatalf("%s: %v", p, err)
	}
	want := objs[0]
	if patches, _, _ := unstructured.NestedSlice(want.Object, "spec", "source", "kustomize", "patches"); len(patches) != 5 {
		t.Fatalf("%s: %d kustomize patches, want the 5 of the CAPD post-renderers", p, len(patches))
	}
	want.SetName(want.GetName() + "-kustomize")
	if err := apply(ctx, want.DeepCopy()); err != nil {
		t.Fatalf("%s rejected: %v", p, err)
	}
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(want.GroupVersionKind())
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(want), got); err != nil {
		t.Fatal(err)
	}
	if diff := subsetDiff(want.Object, got.Object, ""); diff != "" {
		t.Errorf("Application read back differently: %s", diff)
	}
}
