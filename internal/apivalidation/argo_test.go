package apivalidation

import (
	"bytes"
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/internal/chartrender"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
)

// TestArgoApplicationsAccepted applies the Argo CD output of every fixture (Application,
// Namespace, Secrets, and in the per-namespace layout the namespace's parent Application)
// against Argo CD's own Application CRD and reads it back.
func TestArgoApplicationsAccepted(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	cfg := generator.DefaultConfig()
	cfg.Format = generator.FormatArgo
	cfg.Flux.Layout = generator.LayoutPerNamespace
	cfg.Argo.RepoURL, cfg.Argo.TargetRevision = "https://git.example.org/cloud/magnum-clusters.git", "main"
	if err := env.EnsureNamespace(ctx, cfg.Argo.Namespace); err != nil {
		t.Fatal(err)
	}
	results := renderFixtures(t, &cfg)
	apps := 0
	for _, n := range sortedKeys(results) {
		res := results[n]
		fs, err := res.Files(&cfg, generator.FileOptions{Secrets: generator.PlaintextSecrets})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range applyOrder(fs) {
			objs, err := chartrender.Parse(bytes.NewReader(fs.Files[p]))
			if err != nil || len(objs) != 1 {
				t.Fatalf("%s: %v", p, err)
			}
			want := objs[0]
			if err := apply(ctx, want.DeepCopy()); err != nil {
				t.Errorf("%s: %s rejected: %v", n, p, err)
				continue
			}
			if want.GetKind() != "Application" {
				continue
			}
			apps++
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(want.GroupVersionKind())
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(want), got); err != nil {
				t.Fatal(err)
			}
			if diff := subsetDiff(want.Object, got.Object, ""); diff != "" {
				t.Errorf("%s: Application read back differently: %s", n, diff)
			}
		}
	}
	if apps < 20 {
		t.Errorf("only %d Applications validated", apps)
	}
	// The schema is real: a sync policy of the wrong shape is refused.
	bad := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": "malformed", "namespace": cfg.Argo.Namespace},
		"spec": map[string]any{"project": "default", "destination": map[string]any{"server": "https://kubernetes.default.svc"},
			"syncPolicy": map[string]any{"syncOptions": "ServerSideApply=true"}},
	}}
	if err := apply(ctx, bad, client.DryRunAll); err == nil {
		t.Error("an Application with syncOptions as a string was accepted")
	}
}
