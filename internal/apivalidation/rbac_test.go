package apivalidation

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/magnum-gitops/magnum-gitops/internal/servicechart"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
	"github.com/magnum-gitops/magnum-gitops/magnum"
)

// TestDeployRBAC applies deploy/service/rbac.yaml and acts as its service account: it may
// delete a Magnum cluster's Secret, but not another Secret (the admission policy), nor read
// any (RBAC); it may hold its Lease, in its own namespace only; it may record Events.
func TestDeployRBAC(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	for _, ns := range []string{"magnum-gitops", "flux-system", "magnum-rbac-test"} {
		if err := env.EnsureNamespace(ctx, ns); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range manifests(t, filepath.Join(testenv.RepoRoot(), "deploy", "service", "rbac.yaml")) {
		if err := apply(ctx, o); err != nil {
			t.Fatalf("%s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
	sa := serviceAccountClient(t)
	secret := func(ns, name string, labels map[string]string) *corev1.Secret {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}}
		if err := env.Client.Create(ctx, s); client.IgnoreAlreadyExists(err) != nil {
			t.Fatal(err)
		}
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}

	// The policy is enforced once the API server has loaded it: until then a delete of the
	// foreign Secret goes through, so it is made again.
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := sa.Delete(ctx, secret("flux-system", "sops-age", nil))
		if apierrors.IsForbidden(err) || apierrors.IsInvalid(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the service account deleted a Secret that is not a Magnum cluster's: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "flux-system", Name: "sops-age"}, &corev1.Secret{}); err != nil {
		t.Errorf("the foreign Secret is gone: %v", err)
	}
	own := secret("magnum-rbac-test", "k1-ca", map[string]string{magnum.LabelClusterUUID: "3e9b7c52-1d4a-4f8e-9b6c-2a7d5e8f1c03"})
	if err := sa.Delete(ctx, own); err != nil {
		t.Errorf("deleting a Magnum cluster's Secret: %v", err)
	}
	if err := sa.Get(ctx, client.ObjectKey{Namespace: "flux-system", Name: "sops-age"}, &corev1.Secret{}); !apierrors.IsForbidden(err) {
		t.Errorf("reading a Secret: %v, want forbidden", err)
	}
	if err := sa.List(ctx, &corev1.SecretList{}, client.InNamespace("magnum-rbac-test")); !apierrors.IsForbidden(err) {
		t.Errorf("listing Secrets: %v, want forbidden", err)
	}
	if err := sa.List(ctx, &corev1.ConfigMapList{}); !apierrors.IsForbidden(err) {
		t.Errorf("listing ConfigMaps: %v, want forbidden", err)
	}
	lease := func(ns string) error {
		l := &unstructured.Unstructured{}
		l.SetAPIVersion("coordination.k8s.io/v1")
		l.SetKind("Lease")
		l.SetNamespace(ns)
		l.SetName("magnum-gitops-rbac-test")
		return sa.Create(ctx, l)
	}
	if err := lease("magnum-gitops"); client.IgnoreAlreadyExists(err) != nil {
		t.Errorf("holding its Lease: %v", err)
	}
	if err := lease("flux-system"); !apierrors.IsForbidden(err) {
		t.Errorf("a Lease in another namespace: %v, want forbidden", err)
	}
	// Events on the clusters' HelmReleases, in their namespaces; never reading them.
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "magnum-rbac-test", GenerateName: "k1."},
		InvolvedObject: corev1.ObjectReference{APIVersion: "helm.toolkit.fluxcd.io/v2", Kind: "HelmRelease", Namespace: "magnum-rbac-test", Name: "k1"},
		Reason:         "Committed", Message: "rbac test", Type: corev1.EventTypeNormal, Source: corev1.EventSource{Component: "magnum-gitops"}}
	if err := sa.Create(ctx, ev); err != nil {
		t.Errorf("recording an Event: %v", err)
	}
	if err := sa.List(ctx, &corev1.EventList{}, client.InNamespace("magnum-rbac-test")); !apierrors.IsForbidden(err) {
		t.Errorf("listing Events: %v, want forbidden", err)
	}
}

// TestArgoRBAC renders the chart in Argo mode and acts as its service account: it may
// delete a MachineDeployment of the chart that Argo CD applied (a deleted node group's,
// which Argo CD never prunes), and no other MachineDeployment (the admission policy).
func TestArgoRBAC(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	const ns = "magnum-argo-rbac-test"
	for _, n := range []string{servicechart.DeployNamespace, ns} {
		if err := env.EnsureNamespace(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	ch, err := servicechart.Load(testenv.RepoRoot())
	if err != nil {
		t.Fatal(err)
	}
	vals := serviceChartValues(t, "deploy-service-values.yaml")
	vals["config"].(map[string]any)["format"] = "argo"
	objs := renderServiceChart(t, ch, servicechart.DeployRelease, servicechart.DeployNamespace, vals)
	applied := 0
	for _, o := range objs {
		if strings.HasSuffix(o.GetName(), "-node-group-cleanup") {
			if err := apply(ctx, o); err != nil {
				t.Fatalf("%s %s: %v", o.GetKind(), o.GetName(), err)
			}
			applied++
		}
	}
	if applied != 4 {
		t.Fatalf("%d node-group-cleanup objects rendered in Argo mode, want a ClusterRole, its binding, a policy and its binding", applied)
	}
	sa := serviceAccountClient(t)
	md := func(name string, labels, annotations map[string]string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
			"clusterName": "k1", "selector": map[string]any{},
			"template": map[string]any{"spec": map[string]any{"clusterName": "k1",
				"bootstrap":         map[string]any{"dataSecretName": "k1-bootstrap"},
				"infrastructureRef": map[string]any{"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "OpenStackMachineTemplate", "name": "k1"}}}}}}
		u.SetAPIVersion("cluster.x-k8s.io/v1beta1")
		u.SetKind("MachineDeployment")
		u.SetNamespace(ns)
		u.SetName(name)
		u.SetLabels(labels)
		u.SetAnnotations(annotations)
		if err := env.Client.Create(ctx, u); client.IgnoreAlreadyExists(err) != nil {
			t.Fatal(err)
		}
		return u
	}
	chart := map[string]string{magnum.LabelChartCluster: "k1"}
	// Enforced once the API server has loaded the policy: until then the delete of the
	// operator's own MachineDeployment goes through, so it is made again.
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := sa.Delete(ctx, md("k1-operators", chart, nil))
		if err != nil && strings.Contains(err.Error(), "only the MachineDeployments of Magnum clusters that Argo CD applied") {
			break // the policy's refusal, not RBAC's before the binding is seen
		}
		if time.Now().After(deadline) {
			t.Fatalf("the service account deleted a MachineDeployment Argo CD did not apply: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	tracked := map[string]string{"argocd.argoproj.io/tracking-id": "k1:cluster.x-k8s.io/MachineDeployment:" + ns + "/k1-gpu"}
	if err := sa.Delete(ctx, md("other-gpu", nil, tracked)); !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
		t.Errorf("deleting a MachineDeployment not of the chart: %v, want forbidden", err)
	}
	if err := sa.Delete(ctx, md("k1-gpu", chart, tracked)); err != nil {
		t.Errorf("deleting a deleted node group's MachineDeployment Argo CD applied: %v", err)
	}
	if err := sa.Update(ctx, md("k1-default-worker", chart, tracked)); !apierrors.IsForbidden(err) {
		t.Errorf("updating a MachineDeployment: %v, want forbidden", err)
	}
}

// serviceAccountClient acts on the API server as the chart's service account,
// magnum-gitops/magnum-gitops, with the groups Kubernetes gives a service account.
func serviceAccountClient(t *testing.T) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:magnum-gitops:magnum-gitops",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:magnum-gitops", "system:authenticated"}}
	sa, err := client.New(cfg, client.Options{Scheme: env.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return sa
}
