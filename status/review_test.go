package status_test

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/status"
)

// TestEvaluateReview: while Flux has not applied the operation's commit, the pull request
// that carries it says what the operation waits for, and one closed without merge fails it.
func TestEvaluateReview(t *testing.T) {
	t.Parallel()
	const url = "https://gitea.example.org/ops/clusters/pulls/7"
	applying := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
		"metadata": map[string]any{"name": "magnum-clusters", "namespace": "flux-system"},
		"status":   map[string]any{"lastAppliedRevision": "main@sha1:" + strings.Repeat("a", 40)},
	}}
	revision := strings.Repeat("b", 40)
	for _, tc := range []struct {
		name       string
		status     v1alpha1.ClusterStatus
		review     status.Review
		ancestry   bool
		want       v1alpha1.ClusterStatus
		wantReason string
	}{
		{"no review", v1alpha1.CreateInProgress, status.Review{}, false, v1alpha1.CreateInProgress, "waiting for Flux to apply revision bbbbbbb"},
		{"open", v1alpha1.CreateInProgress, status.Review{URL: url, State: status.ReviewOpen}, false, v1alpha1.CreateInProgress, "waiting for review of pull request " + url},
		{"conflict", v1alpha1.UpdateInProgress, status.Review{URL: url, State: status.ReviewOpen, Unmergeable: true}, false, v1alpha1.UpdateInProgress, "waiting for review of pull request " + url + ", which the forge cannot merge as it stands"},
		{"not read yet", v1alpha1.UpdateInProgress, status.Review{URL: url}, false, v1alpha1.UpdateInProgress, "waiting for review of pull request " + url},
		{"merged", v1alpha1.UpdateInProgress, status.Review{URL: url, State: status.ReviewMerged, By: "reviewer"}, false, v1alpha1.UpdateInProgress, "pull request " + url + " merged by reviewer; waiting for Flux to apply revision bbbbbbb"},
		{"closed", v1alpha1.CreateInProgress, status.Review{URL: url, State: status.ReviewClosed, By: "reviewer"}, false, v1alpha1.CreateFailed, "pull request " + url + " was closed without merge by reviewer"},
		{"closed delete", v1alpha1.DeleteInProgress, status.Review{URL: url, State: status.ReviewClosed, By: "ops"}, false, v1alpha1.DeleteFailed, "pull request " + url + " was closed without merge by ops"},
		// Applied: the pull request no longer decides (Flux applied what it carried).
		{"applied", v1alpha1.CreateInProgress, status.Review{URL: url, State: status.ReviewClosed, By: "ops"}, true, v1alpha1.CreateInProgress, "waiting for Flux to create HelmRelease"},
		// An operation already settled is not taken back by its pull request.
		{"complete", v1alpha1.CreateComplete, status.Review{URL: url, State: status.ReviewClosed}, false, v1alpha1.CreateComplete, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := status.View{ClusterUUID: "u1", StackID: "prod-a-x", Namespace: "magnum-p1", Status: tc.status,
				Since: time.Now(), Revision: revision}
			opts := status.DefaultOptions(time.Now())
			opts.Review = tc.review
			if tc.ancestry {
				opts.Ancestry = status.Ancestry{Applied: "main@sha1:" + strings.Repeat("a", 40), Includes: true}
			}
			r := status.Evaluate(v, status.Objects{Kustomization: applying}, opts)
			if r.Status != tc.want || !strings.HasPrefix(r.StatusReason, tc.wantReason) {
				t.Errorf("got %s %q, want %s %q…", r.Status, r.StatusReason, tc.want, tc.wantReason)
			}
		})
	}
}
