package apivalidation

import (
	"os"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, &env)) }
