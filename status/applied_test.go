package status_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/magnum-gitops/magnum-gitops/status"
)

// TestApplied: the one rule for "has Flux applied the commit of this operation?", which the
// status mapping, the service's API and its delete loop all ask.
func TestApplied(t *testing.T) {
	t.Parallel()
	a, b := strings.Repeat("a", 40), strings.Repeat("b", 40)
	kustomization := func(last string, history ...[2]string) *unstructured.Unstructured {
		k := &unstructured.Unstructured{Object: map[string]any{}}
		_ = unstructured.SetNestedField(k.Object, last, "status", "lastAppliedRevision")
		var h []any
		for _, e := range history {
			h = append(h, map[string]any{"metadata": map[string]any{"revision": e[0]}, "lastReconciledStatus": e[1]})
		}
		if h != nil {
			_ = unstructured.SetNestedSlice(k.Object, h, "status", "history")
		}
		return k
	}
	c := strings.Repeat("c", 40)
	later := status.Options{Ancestry: status.Ancestry{Applied: "main@sha1:" + b, Includes: true}}
	for _, tc := range []struct {
		name     string
		k        *unstructured.Unstructured
		revision string
		opts     status.Options
		want     bool
	}{
		{"the commit applied", kustomization("main@sha1:" + a), a, status.Options{}, true},
		{"another commit applied", kustomization("main@sha1:" + b), a, status.Options{}, false},
		{"a prefix of the commit is not the commit", kustomization("main@sha1:" + a), a[:12], status.Options{}, false},
		{"a later commit that includes it", kustomization("main@sha1:" + b), a, later, true},
		{"an ancestry of another applied revision", kustomization("main@sha1:" + c), a, later, false},
		{"a later commit that does not include it", kustomization("main@sha1:" + b), a,
			status.Options{Ancestry: status.Ancestry{Applied: "main@sha1:" + b}}, false},
		{"in the history, succeeded", kustomization("main@sha1:"+b, [2]string{"main@sha1:" + a, "ReconciliationSucceeded"}), a, status.Options{}, true},
		{"in the history, failed", kustomization("main@sha1:"+b, [2]string{"main@sha1:" + a, "ReconciliationFailed"}), a, status.Options{}, false},
		{"no commit to wait for", kustomization("main@sha1:" + a), "", status.Options{}, false},
		{"nothing applied yet", kustomization(""), a, status.Options{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, got := status.Applied(tc.k, tc.revision, tc.opts); got != tc.want {
				t.Errorf("Applied = %v, want %v", got, tc.want)
			}
		})
	}
}
