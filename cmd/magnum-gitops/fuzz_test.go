package main

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
)

// FuzzLoadConfig: the configuration decoder never panics, and every refusal of a document
// is an input error (exit status 2) that quotes no value of it.
func FuzzLoadConfig(f *testing.F) {
	for _, p := range []string{"../../docs/magnum-gitops.example.yaml", "../../fixtures/config/site-overlay.yaml"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("git:\n  url: http://u:p@h/x.git\nserve: {listen: x}\n"))
	f.Add([]byte("magnum: &a {capi_helm: *a}\n"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 32<<10 {
			return
		}
		p := filepath.Join(dir, "config.yaml")
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := loadConfig(p)
		if err != nil {
			if !errors.Is(err, v1alpha1.ErrInvalidInput) {
				t.Fatalf("a refusal that is not an input error: %v", err)
			}
			return
		}
		if cfg.Flux.Path == "" {
			t.Fatal("an accepted configuration without flux.path")
		}
	})
}
