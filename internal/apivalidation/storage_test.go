package apivalidation

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/magnum-gitops/magnum-gitops/internal/chartrender"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
)

// TestV1beta1ObjectsKeepTheirFields stores the chart's v1beta1 Cluster API objects for real
// and reads them back: every field must survive. Envtest runs no conversion webhook, so
// with CAPI's own storage version (v1beta2) the server would prune the v1beta1-only fields
// (e.g. MachineDeployment infrastructureRef.apiVersion); testenv stores v1beta1.
func TestV1beta1ObjectsKeepTheirFields(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	res := renderFixtures(t, nil)["12-autoscaling-default-worker.yaml"]
	ch, err := chartrender.LoadVersion("0.27.0")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := chartrender.Render(ch, res.ReleaseName, res.Namespace, res.Values)
	if err != nil {
		t.Fatal(err)
	}
	if err := env.EnsureNamespace(ctx, res.Namespace); err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, o := range objs {
		switch o.GetKind() {
		case "Cluster", "KubeadmControlPlane", "MachineDeployment", "KubeadmConfigTemplate", "MachineHealthCheck":
		default:
			continue
		}
		if o.GroupVersionKind().Version != "v1beta1" {
			t.Fatalf("%s is %s; this test is about v1beta1", o.GetKind(), o.GetAPIVersion())
		}
		o.SetNamespace(res.Namespace)
		if err := apply(ctx, o.DeepCopy()); err != nil {
			t.Fatalf("%s %s: %v", o.GetKind(), o.GetName(), err)
		}
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(o.GroupVersionKind())
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(o), got); err != nil {
			t.Fatal(err)
		}
		if diff := subsetDiff(o.Object, got.Object, ""); diff != "" {
			t.Errorf("%s %s lost fields: %s", o.GetKind(), o.GetName(), diff)
		}
		checked++
	}
	if checked < 5 {
		t.Errorf("checked %d objects, want at least 5", checked)
	}
}
