package service

import (
	"testing"

	"github.com/magnum-gitops/magnum-gitops/status/report"
)

// TestForgetHealth: what Magnum was told of a cluster that left the index is dropped; the
// live clusters' values stay, so they are not read from Magnum again.
func TestForgetHealth(t *testing.T) {
	t.Parallel()
	var s Service
	for _, uuid := range []string{"live", "deleted", "deleting"} {
		s.knownHealth.Store(uuid, report.Known{HealthStatus: "HEALTHY"})
	}
	s.forgetHealth(map[string]bool{"live": true})
	var left []string
	s.knownHealth.Range(func(k, _ any) bool { left = append(left, k.(string)); return true })
	if len(left) != 1 || left[0] != "live" {
		t.Fatalf("known health of %v, want [live]", left)
	}
}
