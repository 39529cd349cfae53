package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
)

// FuzzLoad: the configuration decoder never panics, and every refusal of a document
// is an input error (exit status 2) that quotes no value of it.
func FuzzLoad(f *testing.F) {
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
		cfg, err := Load(p)
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

// TestLoad: the documented example and the fixtures load; a misspelt option, a bad
// duration and a per-namespace layout without a repository are refused by name; magnum.conf
// is read first and the file's magnum section overrides it.
func TestLoad(t *testing.T) {
	t.Parallel()
	if _, err := Load("../../docs/magnum-gitops.example.yaml"); err != nil {
		t.Errorf("the documented example does not load: %v", err)
	}
	if _, err := Load("../../fixtures/config/site-overlay.yaml"); err != nil {
		t.Error(err)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("magnum:\n  capi_helm:\n    namespace_prefx: x\n"), 0o644)
	if _, err := Load(bad); err == nil || !strings.Contains(err.Error(), `unknown field "magnum.capi_helm.namespace_prefx"`) &&
		!strings.Contains(err.Error(), "namespace_prefx") {
		t.Errorf("misspelt option: %v", err)
	}
	conf := filepath.Join(t.TempDir(), "magnum.conf")
	os.WriteFile(conf, []byte("[capi_helm]\nnamespace_prefix = mgmt\ndefault_helm_chart_version = 0.24.1\n[cinder_client]\nregion_name = R9\n"), 0o644)
	withConf := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(withConf, []byte("magnum_conf: "+conf+"\nmagnum:\n  capi_helm:\n    default_helm_chart_version: 0.27.0\n"), 0o644)
	if c, err := Load(withConf); err != nil || c.Magnum.CapiHelm.NamespacePrefix != "mgmt" ||
		c.Magnum.CapiHelm.DefaultHelmChartVersion != "0.27.0" || c.Magnum.CinderClient.RegionName != "R9" {
		t.Errorf("magnum_conf then YAML: %+v %v", c.Magnum.CapiHelm, err)
	}
	os.WriteFile(bad, []byte("flux:\n  interval: soon\n"), 0o644)
	if _, err := Load(bad); err == nil || !strings.Contains(err.Error(), "flux.interval: must be a duration") {
		t.Errorf("bad duration: %v", err)
	}
	// The per-namespace layout's GitRepositories fetch git.url unless flux.git says otherwise.
	layout := filepath.Join(t.TempDir(), "layout.yaml")
	os.WriteFile(layout, []byte("flux:\n  layout: per-namespace\ngit:\n  url: https://git.example.org/c.git\n  branch: clusters\n"), 0o644)
	if c, err := Load(layout); err != nil || c.Flux.Git.URL != "https://git.example.org/c.git" || c.Flux.Git.Branch != "clusters" {
		t.Errorf("per-namespace layout from git.url: %+v %v", c.Flux.Git, err)
	}
	os.WriteFile(layout, []byte("flux:\n  layout: per-namespace\n"), 0o644)
	if _, err := Load(layout); err == nil || !strings.Contains(err.Error(), "flux.git.url") {
		t.Errorf("per-namespace layout without a repository: %v", err)
	}
	// The branch-per-namespace layout publishes under magnum-gitops/: git.branch is not there.
	os.WriteFile(layout, []byte("flux:\n  layout: branch-per-namespace\ngit:\n  url: https://git.example.org/c.git\n  branch: magnum-gitops/main\n"), 0o644)
	if _, err := Load(layout); err == nil || !strings.Contains(err.Error(), "git.branch: must not start with magnum-gitops/") {
		t.Errorf("branch-per-namespace layout publishing over git.branch: %v", err)
	}
}

// TestLoadManagementClusters: a management cluster's kubeconfig_file is relative to the
// configuration's directory, its path must be one Git takes, and a misspelt key in an
// entry is refused by name.
func TestLoadManagementClusters(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "c.yaml")
	for _, tc := range []struct {
		name, doc, err string
	}{
		{"valid", "management_clusters:\n- {name: one, path: clusters/one, regions: [RegionOne], kubeconfig_file: one.kubeconfig}\n- {name: two, path: clusters/two, default: true}\n", ""},
		{"a path Git refuses", "management_clusters:\n- {name: one, path: clusters/.git, default: true}\n", "management_clusters[one].path"},
		{"a misspelt key", "management_clusters:\n- {name: one, path: clusters/one, region: [RegionOne]}\n", `management_clusters[0].region`},
		{"overlapping paths", "management_clusters:\n- {name: one, path: clusters, default: true}\n- {name: two, path: clusters/two, regions: [R2]}\n", "management_clusters[two].path"},
	} {
		if err := os.WriteFile(p, []byte(tc.doc), 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := Load(p)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.err == "" && c.ManagementClusters[0].KubeconfigFile != filepath.Join(dir, "one.kubeconfig"):
			t.Errorf("%s: kubeconfig_file %q, want it under %s", tc.name, c.ManagementClusters[0].KubeconfigFile, dir)
		case tc.err != "" && (err == nil || !errors.Is(err, v1alpha1.ErrInvalidInput) || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: %v; want an input error naming %s", tc.name, err, tc.err)
		}
	}
}
