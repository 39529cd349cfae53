package servicechart

import (
	"errors"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/lint/support"
)

// TestLint: `helm lint --strict` passes with each ci/ values file and with TLS turned
// off, and fails naming a value of the wrong type.
func TestLint(t *testing.T) {
	t.Parallel()
	for _, f := range []string{"deploy-service-values.yaml", "all-options-values.yaml"} {
		msgs, err := Lint(root, "magnum-gitops", ciValues(t, f))
		if err != nil {
			t.Errorf("%s: %v", f, err)
		}
		for _, m := range msgs {
			t.Logf("%s: %s", f, m)
		}
	}
	// TLS is the default; its explicit opt-out lints as clean.
	plain := ciValues(t, "deploy-service-values.yaml")
	plain["tls"] = map[string]any{"enabled": false}
	if msgs, err := Lint(root, "magnum-gitops", plain); err != nil {
		t.Errorf("tls.enabled=false: %v %v", err, msgs)
	}
	// Helm's lint only logs a missing required value; a value of the wrong type it refuses.
	bad := ciValues(t, "deploy-service-values.yaml")
	bad["replicaCount"] = "two"
	msgs, err := Lint(root, "magnum-gitops", bad)
	if !errors.Is(err, ErrLint) {
		t.Fatalf("lint with replicaCount: two: %v, want ErrLint", err)
	}
	found := false
	for _, m := range msgs {
		found = found || m.Severity == support.ErrorSev && strings.Contains(m.Err.Error(), "replicaCount")
	}
	if !found {
		t.Errorf("lint does not name replicaCount: %v", msgs)
	}
}
