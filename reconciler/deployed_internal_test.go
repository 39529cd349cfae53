package reconciler

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/magnum-gitops/magnum-gitops/generator"
)

// TestParseDeployedFromJSON: what is deployed reads the same from the object's JSON (the
// gate's memory of a file it wrote) as from the file's YAML, for a HelmRelease and an
// Argo CD Application.
func TestParseDeployedFromJSON(t *testing.T) {
	t.Parallel()
	ev := fixtureEvent(t, "01-prod-a-create.yaml")
	for _, format := range []string{generator.FormatFlux, generator.FormatArgo} {
		cfg := generator.DefaultConfig()
		cfg.Format = format
		res, err := generator.Render(ev, generator.MustSite(cfg))
		if err != nil {
			t.Fatal(err)
		}
		var obj any = res.Objects.HelmRelease
		if res.Objects.Application != nil {
			obj = res.Objects.Application.Object
		}
		j, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		b, err := generator.MarshalObject(obj)
		if err != nil {
			t.Fatal(err)
		}
		fromYAML, err := parseDeployed(b, nil)
		if err != nil {
			t.Fatal(err)
		}
		fromJSON, err := parseDeployed(b, j)
		if err != nil {
			t.Fatal(err)
		}
		if fromYAML.chartVersion == "" || len(fromYAML.values) == 0 {
			t.Fatalf("%s: nothing read from the YAML: %+v", format, fromYAML)
		}
		if diff := cmp.Diff(fromYAML, fromJSON, cmp.AllowUnexported(deployed{})); diff != "" {
			t.Errorf("%s: from the JSON against from the YAML (-want +got):\n%s", format, diff)
		}
	}
}

// fileTree is a repository of files by path.
type fileTree map[string][]byte

func (f fileTree) ReadFile(p string) ([]byte, bool, error) {
	b, ok := f[p]
	return b, ok, nil
}

func (f fileTree) ListDir(string) ([]string, error) { return nil, nil }

func (f fileTree) ListFiles(string) ([]string, error) { return nil, nil }

// TestReadDeployedChartKustomization: an Argo CD Application with a kustomize source (a
// cluster with chart patches) deploys the chart version and values of the chart
// kustomization beside it, not its branch; without that file nothing is known deployed.
func TestReadDeployedChartKustomization(t *testing.T) {
	t.Parallel()
	ev := fixtureEvent(t, "01-prod-a-create.yaml")
	// Certificate rotation on chart 0.24.1, which has no value for it: a generator patch.
	ev.Cluster.Labels["certificates_expiry_days"] = "21"
	ev.ClusterTemplate.Labels["capi_helm_chart_version"] = "0.24.1"
	cfg := generator.DefaultConfig()
	cfg.Format = generator.FormatArgo
	cfg.Argo.RepoURL, cfg.Argo.TargetRevision = "https://git.example.org/cloud/clusters.git", "main"
	res, err := generator.Render(ev, generator.MustSite(cfg))
	if err != nil {
		t.Fatal(err)
	}
	fs, err := res.Files(&cfg, generator.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := generator.ClusterDir(res.Root, res.Namespace, res.ReleaseName)
	chart := dir + "/" + generator.ChartDir + "/" + generator.KustomizationFile
	if _, ok := fs.Files[chart]; !ok {
		t.Fatalf("no %s: the Application has no kustomize source, the test proves nothing", chart)
	}
	for _, tc := range []struct {
		name        string
		withChart   bool
		wantVersion string
	}{
		{"with its chart kustomization", true, "0.24.1"},
		{"without it", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tree := fileTree{}
			for p, b := range fs.Files {
				if p != chart || tc.withChart {
					tree[p] = b
				}
			}
			d, err := readDeployed(tree, dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			if d.chartVersion != tc.wantVersion {
				t.Errorf("chart version %q, want %q", d.chartVersion, tc.wantVersion)
			}
			want := []byte("null")
			if tc.withChart {
				want, _ = json.Marshal(res.Values)
			}
			if got, _ := json.Marshal(d.values); string(got) != string(want) {
				t.Errorf("values %s\nwant %s", got, want)
			}
		})
	}
}
