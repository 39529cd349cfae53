package generator_test

import (
	"crypto/sha256"
	"encoding/hex"
	"path"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/magnum"
)

// Glance image ids of the upgrade tests.
const (
	img1340  = "7a1b2c3d-0000-4000-8000-000000013400"
	img1343  = "7a1b2c3d-0000-4000-8000-000000013403"
	img1343f = "7a1b2c3d-0000-4000-8000-0000f0013403"
	img1350  = "7a1b2c3d-0000-4000-8000-000000013500"
	img1360  = "7a1b2c3d-0000-4000-8000-000000013600"
)

// upgradeTo is the fixture's upgrade event asking for Kubernetes target on image id, with
// the upgrade images given.
func upgradeTo(t *testing.T, target, id string, images ...v1alpha1.Image) *v1alpha1.ClusterEvent {
	t.Helper()
	ev := fixtureEvent(t, "06-prod-a-upgrade.yaml")
	ev.Resolved.Image = &v1alpha1.Image{ID: id, KubeVersion: target, OSDistro: "ubuntu"}
	ev.Resolved.UpgradeImages = images
	return ev
}

// TestRenderUpgradeStep: a render more than one Kubernetes minor ahead of what is deployed
// becomes the next minor's step, on the newest image of that minor (of the event's
// os_distro among equals), its HelmRelease annotated with the target; within one minor, a
// downgrade, nothing deployed or a delete, the render is left as it is; without an image
// for the next minor the refusal names resolved.upgrade_images.
func TestRenderUpgradeStep(t *testing.T) {
	t.Parallel()
	images := []v1alpha1.Image{
		{ID: img1340, KubeVersion: "v1.34.0", OSDistro: "ubuntu"},
		{ID: img1343f, KubeVersion: "v1.34.3", OSDistro: "flatcar"},
		{ID: img1343, KubeVersion: "v1.34.3", OSDistro: "ubuntu"},
		{ID: img1350, KubeVersion: "v1.35.0", OSDistro: "ubuntu"},
	}
	tests := []struct {
		name     string
		deployed string // "" for nothing deployed
		target   string
		images   []v1alpha1.Image
		op       v1alpha1.Operation
		// want: the step's image and Kubernetes version, "" for no step; or the error.
		wantImage, wantTo, wantErr string
	}{
		{"two minors: the newest image of the next", "1.33.7", "v1.35.1", images, v1alpha1.UpgradeCluster, img1343, "1.34.3", ""},
		{"three minors: the next one only", "1.33.7", "v1.36.0", images, v1alpha1.UpgradeCluster, img1343, "1.34.3", ""},
		{"from the middle of a chain", "1.34.3", "v1.36.0", images, v1alpha1.UpgradeCluster, img1350, "1.35.0", ""},
		{"any operation", "1.33.7", "v1.35.1", images, v1alpha1.ResizeCluster, img1343, "1.34.3", ""},
		{"one minor: no chain", "1.33.7", "v1.34.3", images, v1alpha1.UpgradeCluster, "", "", ""},
		{"the same version", "1.35.1", "v1.35.1", images, v1alpha1.UpgradeCluster, "", "", ""},
		{"a downgrade is CheckUpgrade's", "1.35.1", "v1.33.7", images, v1alpha1.UpgradeCluster, "", "", ""},
		{"nothing deployed", "", "v1.35.1", images, v1alpha1.UpgradeCluster, "", "", ""},
		{"no image of the next minor", "1.32.4", "v1.35.1", images, v1alpha1.UpgradeCluster, "", "",
			"resolved.upgrade_images: Kubernetes 1.35.1 is 3 minor versions ahead of the 1.32.4 the cluster runs, and Kubernetes upgrades one minor version at a time: list an image of Kubernetes 1.33 (and of each minor up to 1.34) to step through"},
		{"no upgrade images", "1.33.7", "v1.35.1", nil, v1alpha1.UpgradeCluster, "", "", "resolved.upgrade_images: Kubernetes 1.35.1 is 2 minor versions ahead"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ev := upgradeTo(t, tc.target, img1360, tc.images...)
			ev.Operation = tc.op
			if tc.op == v1alpha1.ResizeCluster {
				ev.NodeGroup = "default-worker"
			}
			cfg := defaultConfig()
			res, err := render(ev, cfg)
			if err != nil {
				t.Fatal(err)
			}
			var dep *generator.Deployed
			if tc.deployed != "" {
				dep = &generator.Deployed{Values: map[string]any{"kubernetesVersion": tc.deployed}}
			}
			got, step, err := generator.RenderUpgradeStep(ev, generator.MustSite(*cfg), res, dep)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantImage == "" {
				if step != nil || got != res {
					t.Fatalf("step %+v, want the render as it is", step)
				}
				return
			}
			if step == nil {
				t.Fatal("no step")
			}
			want := generator.UpgradeStep{From: tc.deployed, To: tc.wantTo, Target: strings.TrimPrefix(tc.target, "v"),
				Image: v1alpha1.Image{ID: tc.wantImage, KubeVersion: "v" + tc.wantTo, OSDistro: "ubuntu"}}
			if diff := cmp.Diff(want, *step); diff != "" {
				t.Errorf("step (-want +got):\n%s", diff)
			}
			if v := got.Values["kubernetesVersion"]; v != tc.wantTo || got.Values["machineImageId"] != tc.wantImage {
				t.Errorf("values: kubernetesVersion %v on %v, want %s on %s", v, got.Values["machineImageId"], tc.wantTo, tc.wantImage)
			}
			if a := got.Objects.HelmRelease.Annotations[magnum.AnnotationUpgradeTarget]; a != want.Target {
				t.Errorf("HelmRelease annotation %s = %q, want %q", magnum.AnnotationUpgradeTarget, a, want.Target)
			}
			if a := res.Objects.HelmRelease.Annotations[magnum.AnnotationUpgradeTarget]; a != "" {
				t.Errorf("the event's own render was annotated: %q", a)
			}
			if got.EventDigest != res.EventDigest {
				t.Errorf("EventDigest %q, want the event's %q", got.EventDigest, res.EventDigest)
			}
		})
	}
}

// TestRenderUpgradeStepArgo: in Argo mode a chain steps as in Flux mode, the target on the
// cluster's Application, for both of its shapes: a Helm source deploys the step's version
// in its valuesObject; a kustomize source (chart patches) in the chart kustomization beside
// it, whose digest the Application carries. The event's own render stays unannotated.
func TestRenderUpgradeStepArgo(t *testing.T) {
	t.Parallel()
	images := []v1alpha1.Image{{ID: img1343, KubeVersion: "v1.34.3", OSDistro: "ubuntu"}, {ID: img1350, KubeVersion: "v1.35.0", OSDistro: "ubuntu"}}
	for _, tc := range []struct {
		name               string
		postRenderers      bool
		deployed, target   string
		wantImage, wantTo  string
		wantKustomizeShape bool
	}{
		{"Helm source", false, "1.33.7", "v1.35.1", img1343, "1.34.3", false},
		{"Helm source, from the middle of a chain", false, "1.34.3", "v1.36.0", img1350, "1.35.0", false},
		{"kustomize source", true, "1.33.7", "v1.35.1", img1343, "1.34.3", true},
		{"kustomize source, from the middle of a chain", true, "1.34.3", "v1.36.0", img1350, "1.35.0", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			doc := ""
			if tc.postRenderers {
				doc = capdPostRenderers(t)
			}
			cfg := argoConfig(t, doc)
			ev := upgradeTo(t, tc.target, img1360, images...)
			res, err := render(ev, cfg)
			if err != nil {
				t.Fatal(err)
			}
			got, step, err := generator.RenderUpgradeStep(ev, generator.MustSite(*cfg), res, &generator.Deployed{Values: map[string]any{"kubernetesVersion": tc.deployed}})
			if err != nil {
				t.Fatal(err)
			}
			if step == nil {
				t.Fatal("no step")
			}
			want := generator.UpgradeStep{From: tc.deployed, To: tc.wantTo, Target: strings.TrimPrefix(tc.target, "v"),
				Image: v1alpha1.Image{ID: tc.wantImage, KubeVersion: "v" + tc.wantTo, OSDistro: "ubuntu"}}
			if diff := cmp.Diff(want, *step); diff != "" {
				t.Errorf("step (-want +got):\n%s", diff)
			}
			app := got.Objects.Application
			if app == nil || got.Objects.HelmRelease != nil {
				t.Fatalf("format argo rendered Application %v, HelmRelease %v", app != nil, got.Objects.HelmRelease != nil)
			}
			if a := app.GetAnnotations()[magnum.AnnotationUpgradeTarget]; a != want.Target {
				t.Errorf("Application annotation %s = %q, want %q", magnum.AnnotationUpgradeTarget, a, want.Target)
			}
			if a, ok := res.Objects.Application.GetAnnotations()[magnum.AnnotationUpgradeTarget]; ok {
				t.Errorf("the event's own render was annotated: %q", a)
			}
			if v := got.Values["kubernetesVersion"]; v != tc.wantTo || got.Values["machineImageId"] != tc.wantImage {
				t.Errorf("values: kubernetesVersion %v on %v, want %s on %s", v, got.Values["machineImageId"], tc.wantTo, tc.wantImage)
			}
			// What Argo CD deploys: the Application's own values, or its chart kustomization's.
			fs, err := got.Files(cfg, generator.FileOptions{Secrets: redactedSecrets})
			if err != nil {
				t.Fatal(err)
			}
			dir := generator.ClusterDir(got.Root, got.Namespace, got.ReleaseName)
			chartFile := fs.Files[path.Join(dir, generator.ChartDir, generator.KustomizationFile)]
			srcPath, _, _ := unstructured.NestedString(app.Object, "spec", "source", "path")
			if (srcPath != "") != tc.wantKustomizeShape || (chartFile != nil) != tc.wantKustomizeShape {
				t.Fatalf("source path %q, chart kustomization written %v; want a kustomize source %v", srcPath, chartFile != nil, tc.wantKustomizeShape)
			}
			var deployed map[string]any
			if tc.wantKustomizeShape {
				var k kustypes.Kustomization
				if err := yaml.Unmarshal(chartFile, &k); err != nil || len(k.HelmCharts) != 1 {
					t.Fatalf("chart kustomization: %v, %d charts", err, len(k.HelmCharts))
				}
				deployed = k.HelmCharts[0].ValuesInline
				sum := sha256.Sum256(chartFile)
				if d := app.GetAnnotations()[generator.ChartDigestAnnotation]; d != "sha256:"+hex.EncodeToString(sum[:]) {
					t.Errorf("%s = %q, not the step's chart kustomization's", generator.ChartDigestAnnotation, d)
				}
			} else {
				text, _, _ := unstructured.NestedString(app.Object, "spec", "source", "helm", "values")
				if err := yaml.Unmarshal([]byte(text), &deployed); err != nil {
					t.Fatalf("the Application's values: %v", err)
				}
			}
			if deployed["kubernetesVersion"] != tc.wantTo || deployed["machineImageId"] != tc.wantImage {
				t.Errorf("Argo CD deploys kubernetesVersion %v on %v, want %s on %s", deployed["kubernetesVersion"], deployed["machineImageId"], tc.wantTo, tc.wantImage)
			}
			// The annotation reaches Git: the parent Application applies the file.
			if b := fs.Files[path.Join(dir, generator.ApplicationFile)]; !strings.Contains(string(b), magnum.AnnotationUpgradeTarget+": "+want.Target) {
				t.Errorf("%s lacks the annotation:\n%s", generator.ApplicationFile, b)
			}
		})
	}
}

// TestRenderUpgradeStepRefused: a chain that cannot step is refused, saying why: a values
// overlay that pins kubernetesVersion leaves it nothing to move, in either format.
func TestRenderUpgradeStepRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		config  func(*generator.Config)
		wantErr string
	}{
		{"kubernetesVersion pinned", func(c *generator.Config) { c.ValuesOverlay = map[string]any{"kubernetesVersion": "1.35.1"} },
			"kubernetesVersion is set elsewhere"},
		{"kubernetesVersion pinned, --format argo", func(c *generator.Config) {
			c.ValuesOverlay = map[string]any{"kubernetesVersion": "1.35.1"}
			c.Format = generator.FormatArgo
		}, "kubernetesVersion is set elsewhere"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ev := upgradeTo(t, "v1.35.1", img1360, v1alpha1.Image{ID: img1343, KubeVersion: "v1.34.3"})
			cfg := defaultConfig()
			tc.config(cfg)
			res, err := render(ev, cfg)
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = generator.RenderUpgradeStep(ev, generator.MustSite(*cfg), res, &generator.Deployed{Values: map[string]any{"kubernetesVersion": "1.33.7"}})
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

// TestUpgradeImagesChecked: an upgrade image a step could not deploy is refused, named by
// its index.
func TestUpgradeImagesChecked(t *testing.T) {
	t.Parallel()
	ev := upgradeTo(t, "v1.35.1", img1360, v1alpha1.Image{ID: "not-a-uuid", KubeVersion: "v1.34.3"},
		v1alpha1.Image{ID: img1343, KubeVersion: "1.34.3+k3s1"})
	_, err := render(ev, defaultConfig())
	for _, want := range []string{
		`resolved.upgrade_images[0].id: "not-a-uuid" is not a Glance image UUID`,
		`resolved.upgrade_images[1].kube_version: "1.34.3+k3s1" is not a Kubernetes release version`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want %q", err, want)
		}
	}
}
