//go:build image

package image

import (
	"os"
	"testing"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
)

// env is the API server every test's serve takes its Lease on.
var env *testenv.Env

func TestMain(m *testing.M) {
	// envtest logs its CRD installs through controller-runtime; they say nothing here.
	ctrllog.SetLogger(logr.Discard())
	os.Exit(testenv.Main(m, &env))
}

// unavailable skips a test for want of something this machine lacks, or fails it when
// CI is set: CI must run these tests.
func unavailable(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("CI is set: "+format, args...)
	}
	t.Skipf(format, args...)
}
