package generator_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fluxcd/pkg/apis/kustomize"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/generator"
)

// argoRepo is where the Argo tests' Applications read their chart kustomization.
const argoRepo = "https://git.example.org/cloud/magnum-clusters.git"

// capdPostRenderers is the site's post-renderers of the end-to-end tests
// (fixtures/postrenderers/capd-inmemory.yaml): the chart's clusters on CAPD in memory.
func capdPostRenderers(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "fixtures", "postrenderers", "capd-inmemory.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// argoConfig is format argo with a repository Argo CD reads, and site post-renderers doc.
func argoConfig(t *testing.T, doc string) *generator.Config {
	cfg := defaultConfig()
	cfg.Format = generator.FormatArgo
	cfg.Argo.RepoURL, cfg.Argo.TargetRevision = argoRepo, "main"
	if doc != "" {
		cfg.Flux.PostRenderers = siteRenderers(t, doc)
	}
	return cfg
}

// withOwnPatch gives the event a feature the chart needs a patch of the generator's for:
// certificate rotation on chart 0.24.1, which has no value for it.
func withOwnPatch(ev *v1alpha1.ClusterEvent) {
	ev.Cluster.Labels["certificates_expiry_days"] = "21"
	ev.ClusterTemplate.Labels["capi_helm_chart_version"] = "0.24.1"
}

// checkTestdataGolden compares got with generator/testdata/<name>, rewritten with -update.
func checkTestdataGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test ./generator -run TestArgoPatchesGolden -update)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got):\n%s", p, diff)
	}
}

// TestArgoPatchesGolden: a cluster with patches under Argo CD (the site's CAPD ones and
// the generator's certificate rotation) gets an Application whose source is its chart
// directory in the repository, with the patches, and that directory's kustomization.yaml
// inflates the chart with the cluster's values; the Application's digest is that file's.
func TestArgoPatchesGolden(t *testing.T) {
	t.Parallel()
	cfg := argoConfig(t, capdPostRenderers(t))
	ev := fixtureEvent(t, "01-prod-a-create.yaml")
	withOwnPatch(ev)
	res, err := render(ev, cfg)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := res.Files(cfg, generator.FileOptions{Secrets: redactedSecrets})
	if err != nil {
		t.Fatal(err)
	}
	checkTestdataGolden(t, filepath.Join("argo-patches", "change.yaml"), fs.Stream())

	dir := generator.ClusterDir(res.Root, res.Namespace, res.ReleaseName)
	app := res.Objects.Application
	src, _, _ := unstructured.NestedMap(app.Object, "spec", "source")
	if src["repoURL"] != argoRepo || src["targetRevision"] != "main" || src["path"] != path.Join(dir, generator.ChartDir) {
		t.Errorf("Application source = %v, want %s at main, path %s", src, argoRepo, path.Join(dir, generator.ChartDir))
	}
	if _, ok := src["helm"]; ok {
		t.Error("an Application with a kustomize source also has a helm section: Argo CD refuses two source types")
	}
	// Cluster API deletes the Cluster's machines in its own order only when Argo CD deletes
	// in the background.
	if f := app.GetFinalizers(); !slices.Equal(f, []string{"resources-finalizer.argocd.argoproj.io/background"}) {
		t.Errorf("finalizers %v, want Argo CD's background resources finalizer", f)
	}
	chartFile := fs.Files[path.Join(dir, generator.ChartDir, generator.KustomizationFile)]
	if chartFile == nil {
		t.Fatalf("no %s/%s/%s in %v", dir, generator.ChartDir, generator.KustomizationFile, fs.Paths())
	}
	sum := sha256.Sum256(chartFile)
	if got, want := app.GetAnnotations()[generator.ChartDigestAnnotation], "sha256:"+hex.EncodeToString(sum[:]); got != want {
		t.Errorf("%s = %q, want the chart kustomization's %q", generator.ChartDigestAnnotation, got, want)
	}
	var k kustypes.Kustomization
	if err := yaml.UnmarshalStrict(chartFile, &k); err != nil {
		t.Fatal(err)
	}
	if len(k.HelmCharts) != 1 || len(k.Resources) != 0 || len(k.Patches) != 0 {
		t.Fatalf("chart kustomization: %d charts, %d resources, %d patches; want one chart alone", len(k.HelmCharts), len(k.Resources), len(k.Patches))
	}
	hc := k.HelmCharts[0]
	if hc.Name != res.Chart.Name || hc.Repo != res.Chart.Repository || hc.Version != "0.24.1" ||
		hc.ReleaseName != res.ReleaseName || hc.Namespace != res.Namespace || hc.IncludeCRDs {
		t.Errorf("helmCharts[0] = %+v, want chart %s %s from %s, release %s in %s, no CRDs", hc, res.Chart.Name, res.Chart.Version, res.Chart.Repository, res.ReleaseName, res.Namespace)
	}
	if string(mustJSON(t, hc.ValuesInline)) != string(mustJSON(t, res.Values)) {
		t.Error("the chart kustomization's valuesInline differ from the rendered values")
	}
	// The cluster directory's own kustomization.yaml lists the Secrets and the
	// Application, never the chart directory: that is the child Application's.
	var own kustypes.Kustomization
	if err := yaml.Unmarshal(fs.Files[path.Join(dir, generator.KustomizationFile)], &own); err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(own.Resources, func(r string) bool { return strings.HasPrefix(r, generator.ChartDir) }) {
		t.Errorf("the cluster's kustomization.yaml lists the chart directory: %v", own.Resources)
	}
}

// TestArgoPatchesMatchFlux: for the same event and configuration, the Application's
// kustomize patches are the HelmRelease's post-renderers' patches, in the order
// helm-controller runs them, and building the chart's objects with either gives the same
// objects.
func TestArgoPatchesMatchFlux(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		site  string
		event func(*v1alpha1.ClusterEvent)
		n     int
	}{
		{"the site's alone", capdPostRenderers(t), func(*v1alpha1.ClusterEvent) {}, 5},
		{"the generator's, then the site's", capdPostRenderers(t), withOwnPatch, 6},
		{"the generator's alone", "", withOwnPatch, 1},
		{"two site post-renderers", capdPostRenderers(t) + strings.TrimPrefix(sitePatches, "\n"), func(*v1alpha1.ClusterEvent) {}, 7},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			argoCfg := argoConfig(t, tc.site)
			fluxCfg := defaultConfig()
			fluxCfg.Flux.PostRenderers = argoCfg.Flux.PostRenderers
			ev := fixtureEvent(t, "01-prod-a-create.yaml")
			tc.event(ev)
			fluxRes, err := render(ev, fluxCfg)
			if err != nil {
				t.Fatal(err)
			}
			argoRes, err := render(ev, argoCfg)
			if err != nil {
				t.Fatal(err)
			}
			var want []kustomize.Patch
			for _, pr := range fluxRes.Objects.HelmRelease.Spec.PostRenderers {
				want = append(want, pr.Kustomize.Patches...)
			}
			got, _, _ := unstructured.NestedSlice(argoRes.Objects.Application.Object, "spec", "source", "kustomize", "patches")
			if len(got) != tc.n || len(want) != tc.n {
				t.Fatalf("%d Application patches, %d HelmRelease patches, want %d", len(got), len(want), tc.n)
			}
			var wantAny []any // as the Application holds them, keys in order
			if err := json.Unmarshal(mustJSON(t, want), &wantAny); err != nil {
				t.Fatal(err)
			}
			if a, f := string(mustJSON(t, got)), string(mustJSON(t, wantAny)); a != f {
				t.Errorf("Application patches differ from the HelmRelease's:\nargo: %s\nflux: %s", a, f)
			}
			if string(mustJSON(t, argoRes.Values)) != string(mustJSON(t, fluxRes.Values)) {
				t.Error("the Application's chart gets other values than the HelmRelease")
			}

			// Both on the chart's objects: helm-controller runs each post-renderer in turn,
			// Argo CD's kustomize the one list.
			objs := renderChart(t, chartFor(fluxRes), fluxRes, fluxRes.Values)
			byFlux := chartYAML(t, objs)
			for _, pr := range fluxRes.Objects.HelmRelease.Spec.PostRenderers {
				byFlux = patchBuild(t, byFlux, pr.Kustomize.Patches)
			}
			var argoPatches []kustomize.Patch
			if err := json.Unmarshal(mustJSON(t, got), &argoPatches); err != nil {
				t.Fatal(err)
			}
			byArgo := patchBuild(t, chartYAML(t, objs), argoPatches)
			if diff := cmp.Diff(string(byFlux), string(byArgo)); diff != "" {
				t.Errorf("the chart's objects differ (-flux post-renderers +argo kustomize):\n%s", diff)
			}
			if tc.site != "" && (!bytes.Contains(byArgo, []byte("kind: DevCluster")) || bytes.Contains(byArgo, []byte("kind: OpenStackCluster"))) {
				t.Error("the CAPD patches did not make the OpenStackCluster a DevCluster")
			}
		})
	}
}

// chartYAML joins rendered chart objects into one YAML stream.
func chartYAML(t *testing.T, objs []*unstructured.Unstructured) []byte {
	t.Helper()
	var b bytes.Buffer
	for _, o := range objs {
		y, err := yaml.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString("---\n")
		b.Write(y)
	}
	return b.Bytes()
}

// patchBuild runs kustomize on resources with patches, in memory.
func patchBuild(t *testing.T, resources []byte, patches []kustomize.Patch) []byte {
	t.Helper()
	fsys := filesys.MakeFsInMemory()
	k := map[string]any{"apiVersion": kustypes.KustomizationVersion, "kind": kustypes.KustomizationKind,
		"resources": []string{"chart.yaml"}, "patches": patches}
	kb, err := yaml.Marshal(k)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"/app/kustomization.yaml": kb, "/app/chart.yaml": resources} {
		if err := fsys.WriteFile(name, data); err != nil {
			t.Fatal(err)
		}
	}
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fsys, "/app")
	if err != nil {
		t.Fatalf("kustomize build: %v", err)
	}
	out, err := m.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestArgoWithoutPatches: without patches the Application keeps its Helm source and no
// chart kustomization is written; with argo.repo_url known, the chart kustomization an
// earlier render may have left goes (with patches removed from the site, or at delete).
func TestArgoWithoutPatches(t *testing.T) {
	t.Parallel()
	for _, repo := range []string{"", argoRepo} {
		cfg := argoConfig(t, "")
		cfg.Argo.RepoURL = repo
		if repo == "" {
			cfg.Argo.TargetRevision = ""
		}
		res, err := render(fixtureEvent(t, "01-prod-a-create.yaml"), cfg)
		if err != nil {
			t.Fatal(err)
		}
		src, _, _ := unstructured.NestedMap(res.Objects.Application.Object, "spec", "source")
		if src["chart"] != res.Chart.Name || src["path"] != nil {
			t.Errorf("repo %q: source %v, want the chart's Helm source", repo, src)
		}
		if _, ok := res.Objects.Application.GetAnnotations()[generator.ChartDigestAnnotation]; ok {
			t.Errorf("repo %q: a Helm source carries %s", repo, generator.ChartDigestAnnotation)
		}
		chartFile := path.Join(generator.ClusterDir(res.Root, res.Namespace, res.ReleaseName), generator.ChartDir, generator.KustomizationFile)
		del, err := render(fixtureEvent(t, "08-prod-a-delete.yaml"), cfg)
		if err != nil {
			t.Fatal(err)
		}
		// At a delete the chart kustomization stays while Secrets do: the Application
		// being deleted still compares with it; it goes with the directory.
		for _, c := range []struct {
			name     string
			r        *generator.Result
			existing []string
			removed  bool
		}{
			{"create", res, []string{"secret-ca.sops.yaml"}, repo != ""},
			{"delete with Secrets", del, []string{"secret-ca.sops.yaml"}, false},
			{"delete without", del, nil, repo != ""},
		} {
			fs, err := c.r.Files(cfg, generator.FileOptions{Secrets: redactedSecrets, Existing: c.existing})
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := fs.Files[chartFile]; ok {
				t.Errorf("repo %q, %s: writes %s", repo, c.name, chartFile)
			}
			if got := slices.Contains(fs.Deletes, chartFile); got != c.removed {
				t.Errorf("repo %q, %s: removes %s: %v, want %v", repo, c.name, chartFile, got, c.removed)
			}
		}
	}
}

// TestArgoPatchesRefused: patches Argo CD cannot take are refused naming the field: no
// repository to read them from (site or generator patches), image overrides, a repository
// URL with credentials or no branch.
func TestArgoPatchesRefused(t *testing.T) {
	t.Parallel()
	images := "- kustomize: {images: [{name: nginx, newTag: '1.27'}]}\n"
	cases := []struct {
		name        string
		mutate      func(*generator.Config, *v1alpha1.ClusterEvent)
		field, rule string
	}{
		{"site patches without a repository", func(c *generator.Config, _ *v1alpha1.ClusterEvent) {
			c.Argo.RepoURL, c.Argo.TargetRevision = "", ""
		}, "flux.post_renderers", "set argo.repo_url"},
		{"the generator's patch without a repository", func(c *generator.Config, ev *v1alpha1.ClusterEvent) {
			c.Argo.RepoURL, c.Argo.TargetRevision = "", ""
			c.Flux.PostRenderers = nil
			withOwnPatch(ev)
		}, "cluster.labels.certificates_expiry_days", "set argo.repo_url"},
		{"images", func(c *generator.Config, _ *v1alpha1.ClusterEvent) {
			c.Flux.PostRenderers = siteRenderers(t, images)
		}, "flux.post_renderers[0].kustomize.images", "patches only"},
		{"a token in the URL", func(c *generator.Config, _ *v1alpha1.ClusterEvent) {
			c.Argo.RepoURL = "https://TOKEN@git.example.org/cloud/magnum-clusters.git"
		}, "argo.repo_url", "must not carry"},
		{"not a URL", func(c *generator.Config, _ *v1alpha1.ClusterEvent) {
			c.Argo.RepoURL = "ftp://git.example.org/x.git"
		}, "argo.repo_url", "as Argo CD fetches it"},
		{"no branch", func(c *generator.Config, _ *v1alpha1.ClusterEvent) {
			c.Argo.TargetRevision = ""
		}, "argo.target_revision", "must be the branch"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := argoConfig(t, capdPostRenderers(t))
			ev := fixtureEvent(t, "01-prod-a-create.yaml")
			tc.mutate(cfg, ev)
			_, err := render(ev, cfg)
			var errs v1alpha1.InputErrors
			if err == nil {
				t.Fatalf("rendered, want %s refused", tc.field)
			}
			if !errors.As(err, &errs) {
				t.Fatalf("error %v is no InputErrors", err)
			}
			for _, e := range errs {
				if e.Field == tc.field && strings.Contains(e.Message, tc.rule) {
					if strings.Contains(e.Message, "TOKEN") {
						t.Errorf("%s quotes the URL: %s", e.Field, e.Message)
					}
					return
				}
			}
			t.Errorf("errors %v, want %s: …%s…", errs, tc.field, tc.rule)
		})
	}
}
