package testenv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/generator"
)

// RegistryPassword is the fake password in fixtures/config/registry-password: no output
// may hold it except the (encrypted) registry Secret.
const RegistryPassword = "fixture-registry-password-NOT-REAL-41c9"

// RegistriesConfig is the default configuration with fixtures/config/registries.yaml
// over it and the files it names read, as the CLI loads it (internal/config:
// config.Load reads the files): the trusted CA and the registry password.
func RegistriesConfig(t testing.TB) *generator.Config {
	t.Helper()
	dir := filepath.Join(RepoRoot(), "fixtures", "config")
	cfg := generator.DefaultConfig()
	data, err := os.ReadFile(filepath.Join(dir, "registries.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, &cfg); err != nil {
		t.Fatal(err)
	}
	pem, err := os.ReadFile(filepath.Join(dir, "registry-ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	password, err := os.ReadFile(filepath.Join(dir, "registry-password"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(password)); got != RegistryPassword {
		t.Fatalf("fixtures/config/registry-password no longer holds RegistryPassword")
	}
	cfg.Registries.TrustedCAs = map[string]string{"example-org-ca": string(pem)}
	a := cfg.Registries.Auth["registry.example.org"]
	a.Password = RegistryPassword
	cfg.Registries.Auth["registry.example.org"] = a
	return &cfg
}
