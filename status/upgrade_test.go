package status_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/magnum"
	"github.com/magnum-gitops/magnum-gitops/status"
)

// TestRolledOut: a cluster is rolled out at a version only when the control plane and every
// MachineDeployment want it and are done, judged on states the real controllers recorded.
func TestRolledOut(t *testing.T) {
	t.Parallel()
	states := loadStates(t)
	for _, tc := range []struct {
		fixture, version string
		want             bool
	}{
		{"69-real-upgrade-complete.yaml", "1.34.3", true},
		{"69-real-upgrade-complete.yaml", "1.33.7", false},
		{"62-real-upgrade-control-plane-rolling.yaml", "1.34.3", false},
		{"81-real-upgrade-workers-rolling-out.yaml", "1.34.3", false},
		{"82-real-upgrade-workers-not-all-ready.yaml", "1.34.3", false},
		{"65-real-resize-complete.yaml", "1.33.7", true},
		{"64-real-resize-scaling-up.yaml", "1.33.7", false},
		{"01-creating-no-helmrelease.yaml", "1.33.7", false},
	} {
		t.Run(tc.fixture+"@"+tc.version, func(t *testing.T) {
			t.Parallel()
			sf, ok := states[tc.fixture]
			if !ok {
				t.Fatalf("no fixture %s", tc.fixture)
			}
			v, o, opts := sf.inputs(t, true)
			if got := status.RolledOut(v, o, opts, tc.version); got != tc.want {
				t.Errorf("RolledOut(%s) = %v, want %v", tc.version, got, tc.want)
			}
		})
	}
}

// TestUpgradeChainStatus: while the HelmRelease deploys a step of a chained upgrade (its
// annotation names the target), the step's completion is not the upgrade's, no node group
// completes either, and a step that fails stops the chain with its reason; before Flux
// applied the operation's commit, that wait comes first (and node groups wait on it too).
// The objects are recorded states of a one-step upgrade to 1.34.3, annotated as a step
// toward 1.35.0.
func TestUpgradeChainStatus(t *testing.T) {
	t.Parallel()
	states := loadStates(t)
	stalled := func(o status.Objects) {
		conds, _, _ := unstructured.NestedSlice(o.HelmRelease.Object, "status", "conditions")
		conds = append(conds, map[string]any{"type": "Stalled", "status": "True", "reason": "RetriesExceeded",
			"message": "Failed to upgrade after 1 attempt(s)"})
		if err := unstructured.SetNestedSlice(o.HelmRelease.Object, conds, "status", "conditions"); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		fixture    string
		change     func(status.Objects)
		wantStatus string
		wantReason string
	}{
		{"69-real-upgrade-complete.yaml", nil, "UPDATE_IN_PROGRESS",
			"upgrading to Kubernetes 1.35.0 one minor version at a time: 1.34.3 rolled out, the next step follows"},
		{"81-real-upgrade-workers-rolling-out.yaml", nil, "UPDATE_IN_PROGRESS",
			"upgrading to Kubernetes 1.35.0 one minor version at a time, now to 1.34.3: MachineDeployment prod-a-2b7xq4mzkd5h-default-worker: RollingOut True: Rolling out 4 not up-to-date replicas * Version v1.33.7, v1.34.3 required * DevMachine is not up-to-date"},
		{"81-real-upgrade-workers-rolling-out.yaml", stalled, "UPDATE_FAILED",
			"upgrade to Kubernetes 1.35.0 stopped at 1.34.3: HelmRelease prod-a-2b7xq4mzkd5h stalled: Helm retries exceeded: Failed to upgrade after 1 attempt(s)"},
		{"80-real-upgrade-flux-not-applied.yaml", nil, "UPDATE_IN_PROGRESS", "waiting for Flux to apply revision d0c36d9b2267 (applied: 28f6095fe9c2)"},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			t.Parallel()
			v, o, opts := states[tc.fixture].inputs(t, true)
			o.HelmRelease.SetAnnotations(map[string]string{magnum.AnnotationUpgradeTarget: "1.35.0"})
			if tc.change != nil {
				tc.change(o)
			}
			r := status.Evaluate(v, o, opts)
			if diff := cmp.Diff([2]string{tc.wantStatus, tc.wantReason}, [2]string{string(r.Status), r.StatusReason}); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
			for _, ng := range r.NodeGroups {
				if ng.Status == "UPDATE_COMPLETE" {
					t.Errorf("node group %s UPDATE_COMPLETE between the steps of the chain", ng.Name)
				}
			}
		})
	}
}

// asArgo is the Argo mode of a recorded Flux state: the cluster's Application stands for
// its HelmRelease, synced and healthy, deploying the HelmRelease's values in its Helm
// source, or with a kustomize source (a cluster with chart patches), which holds no values;
// the repository's Application, synced at the commit the Kustomization applied, stands for
// the Kustomization.
func asArgo(t *testing.T, o status.Objects, kustomizeSource bool) status.Objects {
	t.Helper()
	hr := o.HelmRelease
	if hr == nil {
		t.Fatal("the fixture has no HelmRelease")
	}
	values, _, _ := unstructured.NestedMap(hr.Object, "spec", "values")
	text, err := yaml.Marshal(values)
	if err != nil {
		t.Fatal(err)
	}
	source := map[string]any{"repoURL": "https://charts.example.org", "chart": "openstack-cluster", "targetRevision": "0.27.0",
		"helm": map[string]any{"releaseName": hr.GetName(), "values": string(text)}}
	if kustomizeSource {
		source = map[string]any{"repoURL": "https://git.example.org/cloud/clusters.git", "targetRevision": "main",
			"path": "clusters/" + hr.GetNamespace() + "/" + hr.GetName() + "/chart", "kustomize": map[string]any{"patches": []any{}}}
	}
	app := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": hr.GetName(), "namespace": "argocd"},
		"spec":     map[string]any{"source": source, "destination": map[string]any{"namespace": hr.GetNamespace()}},
		"status": map[string]any{"sync": map[string]any{"status": "Synced"}, "health": map[string]any{"status": "Healthy"},
			"operationState": map[string]any{"phase": "Succeeded"}},
	}}
	app.SetLabels(hr.GetLabels())
	app.SetAnnotations(hr.GetAnnotations())
	o.HelmRelease, o.Application = nil, app
	if k := o.Kustomization; k != nil {
		applied := status.AppliedCommit(k.Object["status"].(map[string]any)["lastAppliedRevision"].(string))
		o.Kustomization = &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
			"metadata": map[string]any{"name": "magnum-clusters", "namespace": "argocd"},
			"status": map[string]any{"sync": map[string]any{"status": "Synced", "revision": applied},
				"history": []any{map[string]any{"id": int64(0), "revision": applied}}},
		}}
	}
	return o
}

// TestUpgradeChainStatusArgo: in Argo mode the cluster's Application carries the chain's
// target, and the status reads the chain as with Flux, for both shapes of Application: the
// step's version from a Helm source's values, from the KubeadmControlPlane for a kustomize
// source; a failed Argo CD sync stops the chain; before Argo CD synced the operation's
// commit, that wait comes first. Without the annotation the same objects complete the
// upgrade, so the annotation alone holds it.
func TestUpgradeChainStatusArgo(t *testing.T) {
	t.Parallel()
	states := loadStates(t)
	syncFailed := func(o status.Objects) {
		_ = unstructured.SetNestedMap(o.Application.Object, map[string]any{"phase": "Failed",
			"message": "one or more objects failed to apply, reason: admission webhook denied the request"}, "status", "operationState")
		_ = unstructured.SetNestedField(o.Application.Object, "OutOfSync", "status", "sync", "status")
	}
	for _, shape := range []struct {
		name      string
		kustomize bool
	}{{"Helm source", false}, {"kustomize source", true}} {
		for _, tc := range []struct {
			name, fixture, target string
			change                func(status.Objects)
			wantStatus            string
			wantReason            string
		}{
			{"rolled out", "69-real-upgrade-complete.yaml", "1.35.0", nil, "UPDATE_IN_PROGRESS",
				"upgrading to Kubernetes 1.35.0 one minor version at a time: 1.34.3 rolled out, the next step follows"},
			{"rolling out", "81-real-upgrade-workers-rolling-out.yaml", "1.35.0", nil, "UPDATE_IN_PROGRESS",
				"upgrading to Kubernetes 1.35.0 one minor version at a time, now to 1.34.3: MachineDeployment prod-a-2b7xq4mzkd5h-default-worker: RollingOut True: Rolling out 4 not up-to-date replicas * Version v1.33.7, v1.34.3 required * DevMachine is not up-to-date"},
			{"sync failed", "81-real-upgrade-workers-rolling-out.yaml", "1.35.0", syncFailed, "UPDATE_FAILED",
				"upgrade to Kubernetes 1.35.0 stopped at 1.34.3: Argo CD sync of Application prod-a-2b7xq4mzkd5h failed: one or more objects failed to apply, reason: admission webhook denied the request"},
			{"commit not synced", "80-real-upgrade-flux-not-applied.yaml", "1.35.0", nil, "UPDATE_IN_PROGRESS",
				"waiting for Argo CD to sync revision d0c36d9b2267 (Application magnum-clusters synced: 28f6095fe9c2)"},
			{"no chain", "69-real-upgrade-complete.yaml", "", nil, "UPDATE_COMPLETE", ""},
		} {
			t.Run(shape.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				v, o, opts := states[tc.fixture].inputs(t, true)
				o = asArgo(t, o, shape.kustomize)
				if tc.target != "" {
					o.Application.SetAnnotations(map[string]string{magnum.AnnotationUpgradeTarget: tc.target})
				}
				if tc.change != nil {
					tc.change(o)
				}
				r := status.Evaluate(v, o, opts)
				if diff := cmp.Diff([2]string{tc.wantStatus, tc.wantReason}, [2]string{string(r.Status), r.StatusReason}); diff != "" {
					t.Errorf("status (-want +got):\n%s", diff)
				}
				for _, ng := range r.NodeGroups {
					if tc.target != "" && ng.Status == "UPDATE_COMPLETE" {
						t.Errorf("node group %s UPDATE_COMPLETE between the steps of the chain", ng.Name)
					}
				}
			})
		}
	}
}
