package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadRegistryConfig: the registries section's files are read at load time, relative
// to the configuration file, and a missing one is an error naming the option, never the
// content of anything.
func TestLoadRegistryConfig(t *testing.T) {
	t.Parallel()
	cfg, err := Load("../../fixtures/config/registries.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := cfg.Registries
	if !strings.Contains(r.TrustedCAs["example-org-ca"], "BEGIN CERTIFICATE") {
		t.Errorf("trusted CA not read: %v", r.TrustedCAs)
	}
	if got := r.Auth["registry.example.org"].Password.Reveal(); got != "fixture-registry-password-NOT-REAL-41c9" {
		t.Errorf("password = %q, want the file's content without its newline", got)
	}

	dir := t.TempDir()
	data, err := os.ReadFile("../../fixtures/config/registries.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "site.yaml")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Load(p)
	if err == nil || !strings.Contains(err.Error(), "registries.trusted_ca_files.example-org-ca") {
		t.Errorf("missing CA file: %v, want an error naming the option", err)
	}
	pem, _ := os.ReadFile("../../fixtures/config/registry-ca.pem")
	if err := os.WriteFile(filepath.Join(dir, "registry-ca.pem"), pem, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "registry-password"), []byte("with\"quote-NOT-REAL"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Load(p)
	if err == nil || !strings.Contains(err.Error(), "registries.auth.registry.example.org.password_file") || strings.Contains(err.Error(), "NOT-REAL") {
		t.Errorf("bad password: %v, want an error naming the option and not the value", err)
	}
}
