package argocd

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestStrip(t *testing.T) {
	t.Parallel()
	status := map[string]any{
		"reconciledAt": "2026-11-28T19:00:00Z",
		"sync":         map[string]any{"status": "Synced", "revision": "0123abcd"},
	}
	for _, tc := range []struct {
		name     string
		metadata map[string]any
		want     map[string]any
	}{
		{"server fields go, the rest stays", map[string]any{
			"name": "demo", "namespace": "argocd", "generation": int64(4),
			"uid": "6f1c", "resourceVersion": "812", "creationTimestamp": "2026-11-28T18:59:00Z",
			"managedFields": []any{map[string]any{"manager": "argocd-application-controller"}},
			"annotations":   map[string]any{"a": "b"},
		}, map[string]any{
			"name": "demo", "namespace": "argocd", "generation": int64(4), "annotations": map[string]any{"a": "b"},
		}},
		{"nothing to strip", map[string]any{"name": "demo"}, map[string]any{"name": "demo"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := &unstructured.Unstructured{Object: map[string]any{
				"kind": "Application", "metadata": tc.metadata, "status": status,
			}}
			before := in.DeepCopy()
			out := Strip(in)
			if !reflect.DeepEqual(out.Object["metadata"], tc.want) {
				t.Errorf("metadata = %v, want %v", out.Object["metadata"], tc.want)
			}
			if !reflect.DeepEqual(out.Object["status"], status) {
				t.Errorf("status changed: %v", out.Object["status"])
			}
			if !reflect.DeepEqual(in, before) {
				t.Error("Strip changed its argument")
			}
		})
	}
}
