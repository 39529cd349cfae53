package apivalidation

import (
	"flag"
	"os"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
)

var _ = flag.Bool("update", false, "unused here; accepted so go test ./... -update works")

var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, &env)) }
