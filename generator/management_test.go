package generator_test

import (
	"errors"
	"path"
	"strings"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/generator"
)

// regions is a configuration with two management clusters: one per region, the second
// also taking the GPU template anywhere, and a default for the rest.
func regions() *generator.Config {
	cfg := defaultConfig()
	cfg.ManagementClusters = []generator.ManagementCluster{
		{Name: "gpu", Path: "clusters/gpu", TemplateLabels: map[string]string{"magnum_gitops_pool": "gpu"}},
		{Name: "region-one", Path: "clusters/region-one", Regions: []string{"RegionOne"}},
		{Name: "region-two", Path: "clusters/region-two", Regions: []string{"RegionTwo", "RegionThree"}, Default: true},
	}
	return cfg
}

// TestRoute: each cluster goes to the first management cluster that selects it by region
// and template labels, else to the default; its files live under that one's path, and
// without management_clusters under flux.path.
func TestRoute(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, region string
		labels       map[string]string
		cfg          func() *generator.Config
		want, root   string
	}{
		{"no management_clusters", "RegionOne", nil, defaultConfig, "", "clusters/magnum"},
		{"by region", "RegionOne", nil, regions, "region-one", "clusters/region-one"},
		{"one of the regions", "RegionThree", nil, regions, "region-two", "clusters/region-two"},
		{"by template label, first match wins", "RegionOne", map[string]string{"magnum_gitops_pool": "gpu"}, regions, "gpu", "clusters/gpu"},
		{"a label value that differs", "RegionOne", map[string]string{"magnum_gitops_pool": "cpu"}, regions, "region-one", "clusters/region-one"},
		{"the default", "RegionFour", nil, regions, "region-two", "clusters/region-two"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ev := fixtureEvent(t, "01-prod-a-create.yaml")
			ev.Resolved.RegionName = tc.region
			for k, v := range tc.labels {
				ev.ClusterTemplate.Labels[k] = v
			}
			cfg := tc.cfg()
			res, err := render(ev, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if res.ManagementCluster != tc.want || res.Root != tc.root {
				t.Errorf("routed to %q at %q; want %q at %q", res.ManagementCluster, res.Root, tc.want, tc.root)
			}
			fs, err := res.Files(cfg, generator.FileOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for f := range fs.Files {
				if !strings.HasPrefix(f, tc.root+"/") {
					t.Errorf("%s is outside %s", f, tc.root)
				}
			}
			if _, ok := fs.Files[path.Join(generator.ClusterDir(tc.root, res.Namespace, res.ReleaseName), generator.HelmReleaseFile)]; !ok {
				t.Errorf("no HelmRelease under %s: %v", tc.root, fs.Files)
			}
		})
	}
}

// TestRouteRefused: a cluster no management cluster takes, with no default, is refused
// naming the region it has.
func TestRouteRefused(t *testing.T) {
	t.Parallel()
	cfg := regions()
	cfg.ManagementClusters[2].Default = false
	ev := fixtureEvent(t, "01-prod-a-create.yaml")
	ev.Resolved.RegionName = "RegionFour"
	_, err := render(ev, cfg)
	if !errors.Is(err, v1alpha1.ErrInvalidInput) {
		t.Fatalf("want an input error, got %v", err)
	}
	fes := v1alpha1.FieldErrors(err)
	if len(fes) != 1 || fes[0].Field != "resolved.region_name" || !strings.Contains(fes[0].Message, `region "RegionFour"`) {
		t.Errorf("refusal = %v", err)
	}
}

// TestPerNamespaceLayoutUnderRoot: the per-namespace layout's GitRepository and
// Kustomization apply the namespace under the cluster's management cluster path.
func TestPerNamespaceLayoutUnderRoot(t *testing.T) {
	t.Parallel()
	cfg := regions()
	cfg.Flux.Layout = generator.LayoutPerNamespace
	cfg.Flux.Git.URL = "https://git.example.org/clusters.git"
	cfg.Flux.Git.Branch = "main"
	ev := fixtureEvent(t, "01-prod-a-create.yaml")
	res, err := render(ev, cfg)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := res.Files(cfg, generator.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ks := string(fs.Files[path.Join("clusters/region-one", generator.FluxDir, "kustomization-"+res.Namespace+".yaml")])
	if !strings.Contains(ks, "path: ./clusters/region-one/"+res.Namespace+"\n") {
		t.Errorf("the namespace's Kustomization:\n%s", ks)
	}
}

// TestManagementClustersValidated: each refusal names the management cluster by its name.
func TestManagementClustersValidated(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		mutate func([]generator.ManagementCluster) []generator.ManagementCluster
		field  string
		msg    string
	}{
		{"a path inside another", func(m []generator.ManagementCluster) []generator.ManagementCluster {
			m[1].Path = "clusters/gpu/one"
			return m
		}, "management_clusters[region-one].path", "overlaps"},
		{"the same path", func(m []generator.ManagementCluster) []generator.ManagementCluster {
			m[2].Path = "clusters/region-one"
			return m
		}, "management_clusters[region-two].path", "overlaps"},
		{"an unclean path", func(m []generator.ManagementCluster) []generator.ManagementCluster {
			m[0].Path = "clusters/../gpu"
			return m
		}, "management_clusters[gpu].path", "clean relative path"},
		{"a name twice", func(m []generator.ManagementCluster) []generator.ManagementCluster {
			m[1].Name = "gpu"
			return m
		}, "management_clusters[gpu].name", "names two"},
		{"no name", func(m []generator.ManagementCluster) []generator.ManagementCluster {
			m[0].Name = ""
			return m
		}, "management_clusters[0].name", "required"},
		{"two defaults", func(m []generator.ManagementCluster) []generator.ManagementCluster {
			m[1].Default = true
			return m
		}, "management_clusters", "at most one"},
		{"one that selects nothing", func(m []generator.ManagementCluster) []generator.ManagementCluster {
			m[1].Regions = nil
			return m
		}, "management_clusters[region-one]", "selects no cluster"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := regions()
			cfg.ManagementClusters = tc.mutate(cfg.ManagementClusters)
			err := cfg.Validate()
			fes := v1alpha1.FieldErrors(err)
			if len(fes) != 1 || fes[0].Field != tc.field || !strings.Contains(fes[0].Message, tc.msg) {
				t.Errorf("Validate = %v; want %s: …%s…", err, tc.field, tc.msg)
			}
		})
	}
	if err := regions().Validate(); err != nil {
		t.Errorf("a valid configuration refused: %v", err)
	}
}
