package apivalidation

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"path"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/magnum-gitops/magnum-gitops/fixtures"
	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/internal/chartrender"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
)

const fieldManager = "magnum-gitops"

// renderFixtures renders every fixture event (deletes excluded) with cfg, or the
// default configuration when cfg is nil.
func renderFixtures(t *testing.T, cfg *generator.Config) map[string]*generator.Result {
	t.Helper()
	names, err := fixtures.EventNames()
	if err != nil {
		t.Fatal(err)
	}
	if cfg == nil {
		def := generator.DefaultConfig()
		cfg = &def
	}
	out := map[string]*generator.Result{}
	for _, n := range names {
		data, _ := fixtures.Events.ReadFile("events/" + n)
		ev, err := v1alpha1.DecodeEvent(data)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Operation == v1alpha1.DeleteCluster {
			continue
		}
		res, err := generator.Render(ev, generator.MustSite(*cfg))
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		out[n] = res
	}
	return out
}

func apply(ctx context.Context, u *unstructured.Unstructured, opts ...client.ApplyOption) error {
	opts = append(opts, client.FieldOwner(fieldManager), client.ForceOwnership)
	return env.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), opts...)
}

// TestFluxManifestsAccepted applies every generated manifest (Namespace, HelmRepository,
// HelmRelease, Secrets) with server-side apply and reads it back: the server must accept
// it and keep every field we set, explicit nulls in the values included.
func TestFluxManifestsAccepted(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	cfg := generator.DefaultConfig()
	if err := env.EnsureNamespace(ctx, cfg.Flux.SourceNamespace); err != nil {
		t.Fatal(err)
	}
	results := renderFixtures(t, nil)
	names := sortedKeys(results)
	applied := 0
	for _, n := range names {
		fs, err := results[n].Files(&cfg, generator.FileOptions{Secrets: generator.PlaintextSecrets})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range applyOrder(fs) {
			objs, err := chartrender.Parse(bytes.NewReader(fs.Files[p]))
			if err != nil || len(objs) != 1 {
				t.Fatalf("%s %s: %v", n, p, err)
			}
			want := objs[0]
			if err := apply(ctx, want.DeepCopy()); err != nil {
				t.Errorf("%s: %s rejected: %v", n, p, err)
				continue
			}
			applied++
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(want.GroupVersionKind())
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(want), got); err != nil {
				t.Fatal(err)
			}
			if want.GetKind() == "Secret" {
				stringDataToData(want)
			}
			if diff := subsetDiff(want.Object, got.Object, ""); diff != "" {
				t.Errorf("%s: %s read back differently: %s", n, p, diff)
			}
		}
	}
	t.Logf("%d manifests from %d events accepted", applied, len(names))
}

// TestChartObjectsAccepted renders every fixture's values with openstack-cluster 0.27.0 and
// server-side applies (dry run) everything the chart renders into the cluster namespace:
// Cluster, KubeadmControlPlane, MachineDeployments, OpenStack templates, addons, the
// autoscaler... none may be rejected.
func TestChartObjectsAccepted(t *testing.T) {
	testenv.Require(t, env)
	ch, err := chartrender.LoadVersion("0.27.0")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	results := renderFixtures(t, nil)
	kinds := map[string]int{}
	for _, n := range sortedKeys(results) {
		res := results[n]
		objs, err := chartrender.Render(ch, res.ReleaseName, res.Namespace, res.Values)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if err := env.EnsureNamespace(ctx, res.Namespace); err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			if o.GetNamespace() == "" {
				o.SetNamespace(res.Namespace)
			}
			if err := apply(ctx, o, client.DryRunAll); err != nil {
				t.Errorf("%s: %s %s rejected: %v", n, o.GroupVersionKind(), o.GetName(), err)
				continue
			}
			kinds[o.GetKind()]++
		}
	}
	for _, k := range []string{"Cluster", "KubeadmControlPlane", "MachineDeployment", "OpenStackCluster",
		"OpenStackMachineTemplate", "KubeadmConfigTemplate", "MachineHealthCheck", "HelmRelease", "Manifests", "Deployment"} {
		if kinds[k] == 0 {
			t.Errorf("no %s was validated", k)
		}
	}
	t.Logf("accepted: %v", kinds)
}

// TestMalformedRejected proves the validation is real: the server rejects what the CRD
// schemas forbid.
func TestMalformedRejected(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	res := renderFixtures(t, nil)["01-prod-a-create.yaml"]
	cfg := generator.DefaultConfig()
	fs, err := res.Files(&cfg, generator.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := generator.ClusterDir(res.Root, res.Namespace, res.ReleaseName) + "/" + generator.HelmReleaseFile
	objs, err := chartrender.Parse(bytes.NewReader(fs.Files[p]))
	if err != nil {
		t.Fatal(err)
	}
	if err := env.EnsureNamespace(ctx, res.Namespace); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		mutate func(u *unstructured.Unstructured)
		want   string
	}{
		{"both chart and chartRef", func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedMap(u.Object, map[string]any{"kind": "OCIRepository", "name": "x"}, "spec", "chartRef")
		}, "either chart or chartRef must be set"},
		{"interval of the wrong type", func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, int64(5), "spec", "interval")
		}, "spec.interval"},
		{"retryInterval with RemediateOnFailure", func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "RemediateOnFailure", "spec", "install", "strategy", "name")
		}, "retryInterval"},
		{"unknown drift detection mode", func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "fix", "spec", "driftDetection", "mode")
		}, "spec.driftDetection.mode"},
	}
	for _, tc := range cases {
		u := objs[0].DeepCopy()
		u.SetName("malformed")
		tc.mutate(u)
		err := apply(ctx, u, client.DryRunAll)
		if err == nil {
			t.Errorf("%s: accepted, want a rejection", tc.name)
		} else if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: rejected for another reason: %v", tc.name, err)
		}
	}
	// And the unmodified object is accepted, so the rejections are about the mutations.
	if err := apply(ctx, objs[0].DeepCopy(), client.DryRunAll); err != nil {
		t.Errorf("the valid HelmRelease was rejected: %v", err)
	}
}

// applyOrder lists a change's manifests in the order Flux's kustomize-controller applies
// them: Namespaces, then Secrets, then custom resources.
func applyOrder(fs *generator.FileSet) []string {
	rank := func(p string) int {
		switch {
		case path.Base(p) == generator.NamespaceFile:
			return 0
		case strings.HasPrefix(path.Base(p), generator.SecretFilePrefix):
			return 1
		}
		return 2
	}
	var out []string
	for _, p := range sortedKeys(fs.Files) {
		if path.Base(p) != generator.KustomizationFile {
			out = append(out, p)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return rank(out[i]) < rank(out[j]) })
	return out
}

// stringDataToData turns a Secret's stringData into data, as the API server stores it.
func stringDataToData(u *unstructured.Unstructured) {
	sd, _, _ := unstructured.NestedStringMap(u.Object, "stringData")
	data := map[string]any{}
	for k, v := range sd {
		data[k] = base64.StdEncoding.EncodeToString([]byte(v))
	}
	delete(u.Object, "stringData")
	u.Object["data"] = data
}

// subsetDiff reports where got lacks or changes something want has.
func subsetDiff(want, got any, at string) string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s: want a map, got %T", at, got)
		}
		for _, k := range sortedKeys(w) {
			gv, present := g[k]
			if m, isMap := w[k].(map[string]any); !present && isMap && len(m) == 0 {
				continue // the server drops empty maps such as annotations: {}
			}
			if !present {
				return fmt.Sprintf("%s.%s: missing (want %v)", at, k, w[k])
			}
			if d := subsetDiff(w[k], gv, at+"."+k); d != "" {
				return d
			}
		}
		return ""
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return fmt.Sprintf("%s: want %v, got %v", at, w, got)
		}
		for i := range w {
			if d := subsetDiff(w[i], g[i], fmt.Sprintf("%s[%d]", at, i)); d != "" {
				return d
			}
		}
		return ""
	}
	if fmt.Sprint(want) != fmt.Sprint(got) || (want == nil) != (got == nil) {
		if !reflect.DeepEqual(want, got) {
			return fmt.Sprintf("%s: want %v, got %v", at, want, got)
		}
	}
	return ""
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
