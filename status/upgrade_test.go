package status_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

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
