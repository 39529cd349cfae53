package status_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/magnum-gitops/magnum-gitops/status"
)

// TestSuspendedHelmRelease: every state fixture judged again with its HelmRelease
// suspended keeps its status; the reason names the suspension first and keeps what it
// said before; a fixture with no HelmRelease, or one suspended: false, says nothing of it.
func TestSuspendedHelmRelease(t *testing.T) {
	t.Parallel()
	withHR := 0
	for name, sf := range loadStates(t) {
		for _, tc := range []struct {
			name    string
			suspend any // spec.suspend, nil: left out
			says    bool
		}{
			{"suspended", true, true},
			{"suspend false", false, false},
			{"not set", nil, false},
		} {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				v, o, opts := sf.inputs(t, false)
				before := status.Evaluate(v, o, opts)
				if o.HelmRelease != nil && tc.suspend != nil {
					o.HelmRelease = o.HelmRelease.DeepCopy()
					if err := unstructured.SetNestedField(o.HelmRelease.Object, tc.suspend, "spec", "suspend"); err != nil {
						t.Fatal(err)
					}
				}
				after := status.Evaluate(v, o, opts)
				if after.Status != before.Status {
					t.Errorf("status %s, %s before", after.Status, before.Status)
				}
				prefix := "HelmRelease " + v.StackID + " is suspended"
				switch says := tc.says && o.HelmRelease != nil; {
				case says && !strings.HasPrefix(after.StatusReason, prefix):
					t.Errorf("status_reason %q does not start with %q", after.StatusReason, prefix)
				case says && !strings.HasSuffix(after.StatusReason, before.StatusReason):
					t.Errorf("status_reason %q lost %q", after.StatusReason, before.StatusReason)
				case !says && after.StatusReason != before.StatusReason:
					t.Errorf("status_reason %q, %q before", after.StatusReason, before.StatusReason)
				}
			})
		}
		if v, o, _ := sf.inputs(t, false); o.HelmRelease != nil && v.StackID != "" {
			withHR++
		}
	}
	if withHR < 20 {
		t.Errorf("only %d fixtures hold a HelmRelease", withHR)
	}
}
