package generator_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/generator"
)

// TestGolden replays every fixture event in order into one repository directory, the way
// the demo and the reconciler do, and compares each event's values and change with
// fixtures/golden/<event>/.
func TestGolden(t *testing.T) {
	for _, format := range []string{generator.FormatFlux, generator.FormatArgo} {
		t.Run(format, func(t *testing.T) { replayGolden(t, format) })
	}
}

func replayGolden(t *testing.T, format string) {
	cfg := defaultConfig()
	cfg.Format = format
	repo := t.TempDir()
	for _, name := range fixtureNames(t) {
		ev := fixtureEvent(t, name)
		res, err := render(ev, cfg)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		dir := filepath.Join(repo, generator.ClusterDir(res.Root, res.Namespace, res.ReleaseName))
		var existing []string
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			existing = append(existing, e.Name())
		}
		fs, err := res.Files(cfg, generator.FileOptions{Secrets: redactedSecrets, Existing: existing})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		apply(t, repo, fs)
		base := strings.TrimSuffix(name, ".yaml")
		report := map[string]any{"stack_id": res.ReleaseName, "stack_id_generated": res.ReleaseNameGenerated,
			"namespace": res.Namespace, "chart": res.Chart, "deviations": res.Deviations, "values": res.Values}
		if format == generator.FormatFlux {
			checkGolden(t, filepath.Join(base, "render.json"), mustJSON(t, report))
			checkGolden(t, filepath.Join(base, "change.yaml"), fs.Stream())
			continue
		}
		// Argo CD gets the same values as Flux, in an Application.
		checkGolden(t, filepath.Join(base, "change-argo.yaml"), fs.Stream())
		if res.Objects.Application != nil {
			text, _, _ := unstructured.NestedString(res.Objects.Application.Object, "spec", "source", "helm", "values")
			var vo map[string]any
			if err := yaml.Unmarshal([]byte(text), &vo); err != nil {
				t.Fatalf("%s: the Application's values: %v", name, err)
			}
			if string(mustJSON(t, vo)) != string(mustJSON(t, res.Values)) {
				t.Errorf("%s: Application values differ from the HelmRelease values", name)
			}
		}
	}
}

// apply writes a FileSet into dir.
func apply(t *testing.T, dir string, fs *generator.FileSet) {
	t.Helper()
	for p, b := range fs.Files {
		target := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(target, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range fs.Deletes {
		if err := os.Remove(filepath.Join(dir, p)); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
}

// TestRenderDeterministic renders every fixture twice and requires identical bytes: the
// generator is pure, and Git must see no change when nothing changed.
func TestRenderDeterministic(t *testing.T) {
	t.Parallel()
	cfg := defaultConfig()
	for _, name := range fixtureNames(t) {
		var outs [2]string
		for i := range outs {
			res, err := render(fixtureEvent(t, name), cfg)
			if err != nil {
				t.Fatal(err)
			}
			fs, err := res.Files(cfg, generator.FileOptions{Secrets: generator.PlaintextSecrets})
			if err != nil {
				t.Fatal(err)
			}
			outs[i] = string(fs.Stream())
		}
		if outs[0] != outs[1] {
			t.Errorf("%s: two renders differ", name)
		}
	}
}

// TestGoldenSiteOverlay renders a cluster for a site whose operator used to patch the chart
// (pod/service CIDRs, no API floating IPs, no registry mirrors, fewer operators) and does it
// with values_overlay instead; the overlay's null survives as null for Helm.
func TestGoldenSiteOverlay(t *testing.T) {
	cfg := defaultConfig()
	data, err := os.ReadFile(filepath.Join("..", "fixtures", "config", "site-overlay.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, cfg); err != nil {
		t.Fatal(err)
	}
	ev := fixtureEvent(t, "11-synthesized-nodegroups.yaml")
	ev.ClusterTemplate.Labels = nil // the site default chart version applies
	res, err := render(ev, cfg)
	if err != nil {
		t.Fatal(err)
	}
	v := jsonData(t, res.Values)
	for path, want := range map[string]any{
		"apiServer.associateFloatingIP":           false,
		"apiServer.enableLoadBalancer":            true,
		"apiServer.loadBalancerProvider":          "ovn",
		"addons.nvidiaGPUOperator.enabled":        false,
		"controlPlane.machineRootVolume.diskSize": 40.0,
	} {
		if got := at(v, path); got != want {
			t.Errorf("%s = %v, want %v", path, got, want)
		}
	}
	if !has(v, "registryMirrors") || v["registryMirrors"] != nil {
		t.Error("registryMirrors: null must reach Helm as null")
	}
	checkGolden(t, filepath.Join("site-overlay", "render.json"), mustJSON(t, map[string]any{
		"chart": res.Chart, "deviations": res.Deviations, "values": res.Values}))
	fs, err := res.Files(cfg, generator.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, filepath.Join("site-overlay", "helmrelease.yaml"),
		fs.Files[generator.ClusterDir(res.Root, res.Namespace, res.ReleaseName)+"/"+generator.HelmReleaseFile])

	// The chart honours the overlay: CIDRs reach the Cluster, the FIP is disabled, and the
	// mirrors are gone from the kubeadm config.
	objs := renderChart(t, "0.27.0", res, res.Values)
	cl := chartrenderFind(t, objs, "Cluster", res.ReleaseName)
	if got := str(cl, "spec", "clusterNetwork", "pods", "cidrBlocks"); got != "[10.244.0.0/16]" {
		t.Errorf("Cluster pods = %s", got)
	}
	osc := chartrenderFind(t, objs, "OpenStackCluster", res.ReleaseName)
	if got := str(osc, "spec", "disableAPIServerFloatingIP"); got != "true" {
		t.Errorf("disableAPIServerFloatingIP = %s", got)
	}
	kcp := chartrenderFind(t, objs, "KubeadmControlPlane", res.ReleaseName+"-control-plane")
	if b, _ := yaml.Marshal(kcp.Object); strings.Contains(string(b), "quay.io/v2/azimuth") {
		t.Error("registry mirrors still rendered")
	}
}
