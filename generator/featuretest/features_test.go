package featuretest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/magnum"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/internal/chartrender"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, &env)) }

// chartVersions are the released packages under ../shared/charts.
var chartVersions = []string{"0.10.1", "0.24.1", "0.27.0"}

const registryPassword = testenv.RegistryPassword

func featureEvent(t *testing.T, name, chart string) *v1alpha1.ClusterEvent {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "fixtures", "features", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ev, err := v1alpha1.DecodeEvent(data)
	if err != nil {
		t.Fatal(err)
	}
	ev.ClusterTemplate.Labels["capi_helm_chart_version"] = chart
	return ev
}

func featureConfig(t *testing.T, name string) *generator.Config {
	t.Helper()
	if name == "registries" {
		return testenv.RegistriesConfig(t)
	}
	cfg := generator.DefaultConfig()
	return &cfg
}

// helmValues are the values helm-controller hands to Helm: each valuesFrom Secret's
// document merged in order, then spec.values over them.
func helmValues(t *testing.T, res *generator.Result) map[string]any {
	t.Helper()
	out := map[string]any{}
	for _, ref := range res.Objects.HelmRelease.Spec.ValuesFrom {
		for _, s := range res.Objects.Secrets {
			if s.Name == ref.Name {
				var doc map[string]any
				if err := yaml.Unmarshal([]byte(s.StringData[ref.ValuesKey]), &doc); err != nil {
					t.Fatal(err)
				}
				for k, v := range doc {
					out[k] = v
				}
			}
		}
	}
	for k, v := range res.Values {
		out[k] = v
	}
	return out
}

// rendered is one feature fixture through the whole chain on one chart version.
type rendered struct {
	res  *generator.Result
	objs []*unstructured.Unstructured // after the post-renderers
	raw  []*unstructured.Unstructured // before them
}

func (r rendered) find(t *testing.T, kind, name string) *unstructured.Unstructured {
	t.Helper()
	o := chartrender.Find(r.objs, kind, name)
	if o == nil {
		t.Fatalf("no %s %q; rendered:\n%s", kind, name, chartrender.Kinds(r.objs))
	}
	return o
}

func get(o *unstructured.Unstructured, path ...string) any {
	v, _, _ := unstructured.NestedFieldNoCopy(o.Object, path...)
	return v
}

func str(o *unstructured.Unstructured, path ...string) string {
	if v := get(o, path...); v != nil {
		return fmt.Sprint(v)
	}
	return ""
}

// osmt finds the OpenStackMachineTemplate a KCP or MachineDeployment points at.
func (r rendered) osmt(t *testing.T, owner *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	path := []string{"spec", "template", "spec", "infrastructureRef", "name"}
	if owner.GetKind() == "KubeadmControlPlane" {
		path = []string{"spec", "machineTemplate", "infrastructureRef", "name"}
	}
	return r.find(t, "OpenStackMachineTemplate", str(owner, path...))
}

// serverGroup reads an OpenStackMachineTemplate's server group in the chart's CAPO API
// version (v1alpha7 before chart 0.11).
func serverGroup(o *unstructured.Unstructured) string {
	if id := str(o, "spec", "template", "spec", "serverGroup", "id"); id != "" {
		return id
	}
	return str(o, "spec", "template", "spec", "serverGroupID")
}

type featureCase struct {
	name string
	// refusedOn maps a chart version to the field and rule of its refusal.
	refusedOn map[string][2]string
	check     func(t *testing.T, version string, r rendered)
}

func kcpName(r rendered) string { return magnum.ChartComponentName(r.res.ReleaseName, "control-plane") }
func mdName(r rendered, ng string) string {
	return magnum.ChartComponentName(r.res.ReleaseName, ng)
}

var featureCases = []featureCase{
	{name: "oidc",
		refusedOn: map[string][2]string{"0.10.1": {"cluster.labels.oidc_issuer_url", "chart 0.10.1 has no oidc values"}},
		check: func(t *testing.T, _ string, r rendered) {
			kcp := r.find(t, "KubeadmControlPlane", kcpName(r))
			args, _, _ := unstructured.NestedStringMap(kcp.Object, "spec", "kubeadmConfigSpec", "clusterConfiguration", "apiServer", "extraArgs")
			for flag, want := range map[string]string{"oidc-issuer-url": "https://sso.example.org/realms/cloud", "oidc-client-id": "kubernetes",
				"oidc-username-claim": "preferred_username", "oidc-username-prefix": "sso:", "oidc-groups-claim": "roles",
				"oidc-groups-prefix": "oidc:", "oidc-signing-algs": "RS256"} {
				if args[flag] != want {
					t.Errorf("KCP apiServer --%s = %q, want %q", flag, args[flag], want)
				}
			}
		}},
	{name: "placement",
		check: func(t *testing.T, _ string, r rendered) {
			for ng, az := range map[string]string{"default-worker": "az-1", "workers-az2": "az-2"} {
				md := r.find(t, "MachineDeployment", mdName(r, ng))
				if got := str(md, "spec", "template", "spec", "failureDomain"); got != az {
					t.Errorf("MachineDeployment %s failureDomain = %q, want %q", ng, got, az)
				}
			}
			osc := r.find(t, "OpenStackCluster", r.res.ReleaseName)
			if got := fmt.Sprint(get(osc, "spec", "controlPlaneAvailabilityZones")); got != "[az-1 az-2 az-3]" {
				t.Errorf("OpenStackCluster controlPlaneAvailabilityZones = %s", got)
			}
			if get(osc, "spec", "controlPlaneOmitAvailabilityZone") == true {
				t.Error("controlPlaneOmitAvailabilityZone is still true: CAPO would ignore the zones")
			}
			if got := serverGroup(r.osmt(t, r.find(t, "MachineDeployment", mdName(r, "workers-az2")))); got != "5b1f0a2c-7d3e-4f5a-8b6c-9d0e1f2a3b4c" {
				t.Errorf("workers-az2 server group = %q", got)
			}
			if got := serverGroup(r.osmt(t, r.find(t, "MachineDeployment", mdName(r, "default-worker")))); got != "" {
				t.Errorf("default-worker server group = %q, want none", got)
			}
			if got := serverGroup(r.osmt(t, r.find(t, "KubeadmControlPlane", kcpName(r)))); got != "0c3e5a7b-1d2f-4a6b-8c9d-0e1f2a3b4c5d" {
				t.Errorf("control plane server group = %q", got)
			}
		}},
	{name: "certificate-rotation",
		check: func(t *testing.T, version string, r rendered) {
			if got := get(chartrender.Find(r.raw, "KubeadmControlPlane", kcpName(r)), "spec", "rolloutBefore"); got != nil {
				t.Errorf("chart %s renders rolloutBefore itself (%v): use its value instead of the patch", version, got)
			}
			kcp := r.find(t, "KubeadmControlPlane", kcpName(r))
			if got := fmt.Sprint(get(kcp, "spec", "rolloutBefore", "certificatesExpiryDays")); got != "21" {
				t.Errorf("KCP rolloutBefore.certificatesExpiryDays = %s, want 21", got)
			}
			if got := str(kcp, "spec", "replicas"); got != "3" {
				t.Errorf("the patch changed the KCP: replicas %s", got)
			}
		}},
	{name: "scale-from-zero",
		refusedOn: map[string][2]string{
			"0.10.1": {"nodegroups[gpu-a100].min_node_count", "cannot scale from zero"},
			"0.24.1": {"nodegroups[gpu-a100].min_node_count", "cannot scale from zero"},
		},
		check: func(t *testing.T, _ string, r rendered) {
			md := r.find(t, "MachineDeployment", mdName(r, "gpu-a100"))
			ann := md.GetAnnotations()
			for k, want := range map[string]string{
				"cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size": "0",
				"cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size": "4",
				"capacity.cluster-autoscaler.kubernetes.io/cpu":               "16",
				"capacity.cluster-autoscaler.kubernetes.io/memory":            "131072Mi",
				"capacity.cluster-autoscaler.kubernetes.io/ephemeral-disk":    "50Gi",
				"capacity.cluster-autoscaler.kubernetes.io/gpu-count":         "2",
				"capacity.cluster-autoscaler.kubernetes.io/gpu-type":          "nvidia.com/gpu",
				"capacity.cluster-autoscaler.kubernetes.io/labels":            "capi.stackhpc.com/node-group=gpu-a100",
			} {
				if ann[k] != want {
					t.Errorf("MachineDeployment gpu-a100 %s = %q, want %q", k, ann[k], want)
				}
			}
			if _, found, _ := unstructured.NestedFieldNoCopy(md.Object, "spec", "replicas"); found {
				t.Error("an autoscaled MachineDeployment has replicas")
			}
			// The chart gives the nodes the label the annotation promises the autoscaler.
			kct := r.find(t, "KubeadmConfigTemplate", str(md, "spec", "template", "spec", "bootstrap", "configRef", "name"))
			if b, _ := yaml.Marshal(kct.Object); !strings.Contains(string(b), "capi.stackhpc.com/node-group=gpu-a100") &&
				str(md, "spec", "template", "metadata", "labels", "capi.stackhpc.com/node-group") != "gpu-a100" {
				t.Error("nodes of gpu-a100 do not carry capi.stackhpc.com/node-group=gpu-a100")
			}
			other := r.find(t, "MachineDeployment", mdName(r, "default-worker"))
			for k := range other.GetAnnotations() {
				if strings.HasPrefix(k, "capacity.") {
					t.Errorf("default-worker got %s: the patch reached another group", k)
				}
			}
		}},
	{name: "apiserver",
		check: func(t *testing.T, _ string, r rendered) {
			kcp := r.find(t, "KubeadmControlPlane", kcpName(r))
			api := []string{"spec", "kubeadmConfigSpec", "clusterConfiguration", "apiServer"}
			if got := fmt.Sprint(get(kcp, append(api, "certSANs")...)); got != "[api.prod-a.example.org 203.0.113.10]" {
				t.Errorf("certSANs = %s", got)
			}
			args, _, _ := unstructured.NestedStringMap(kcp.Object, append(api, "extraArgs")...)
			for flag, want := range map[string]string{
				"tls-cipher-suites": "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
				"audit-log-maxage":  "7", "audit-log-maxbackup": "10", "audit-log-maxsize": "100",
				"audit-policy-file": "/etc/kubernetes/audit-policy.yaml", "audit-log-path": "/var/log/kubernetes/audit/audit.log",
			} {
				if args[flag] != want {
					t.Errorf("--%s = %q, want %q", flag, args[flag], want)
				}
			}
			// The chart's lists are concatenated with ours: its own volumes (the admission
			// configuration, from 0.11 on) stay.
			vols, _, _ := unstructured.NestedSlice(kcp.Object, append(api, "extraVolumes")...)
			var names []string
			for _, v := range vols {
				names = append(names, fmt.Sprint(v.(map[string]any)["name"]))
			}
			if !slices.Contains(names, "audit-policy") || !slices.Contains(names, "audit-logs") {
				t.Errorf("extraVolumes %v lack the audit volumes", names)
			}
			files, _, _ := unstructured.NestedSlice(kcp.Object, "spec", "kubeadmConfigSpec", "files")
			var paths []string
			for _, f := range files {
				paths = append(paths, fmt.Sprint(f.(map[string]any)["path"]))
			}
			if !slices.Contains(paths, "/etc/kubernetes/audit-policy.yaml") || len(paths) < 2 {
				t.Errorf("KCP files %v: want the audit policy besides the chart's own", paths)
			}
		}},
	{name: "registries",
		check: func(t *testing.T, _ string, r rendered) {
			kcp := r.find(t, "KubeadmControlPlane", kcpName(r))
			files, _, _ := unstructured.NestedSlice(kcp.Object, "spec", "kubeadmConfigSpec", "files")
			byPath := map[string]map[string]any{}
			for _, f := range files {
				byPath[fmt.Sprint(f.(map[string]any)["path"])] = f.(map[string]any)
			}
			hosts := byPath["/etc/containerd/certs.d/docker.io/hosts.toml"]
			if hosts == nil || !strings.Contains(fmt.Sprint(hosts["content"]), "https://registry.example.org/v2/docker.io") {
				t.Errorf("docker.io hosts.toml = %v", hosts)
			}
			for _, gone := range []string{"ghcr.io", "nvcr.io"} {
				if byPath["/etc/containerd/certs.d/"+gone+"/hosts.toml"] != nil {
					t.Errorf("the chart's %s mirror is still rendered", gone)
				}
			}
			if ca := byPath["/usr/local/share/ca-certificates/example-org-ca.crt"]; ca == nil || !strings.Contains(fmt.Sprint(ca["content"]), "BEGIN CERTIFICATE") {
				t.Error("the registry CA is not on the nodes")
			}
			if auth := byPath["/etc/containerd/conf.d/auth.toml"]; auth == nil || get(&unstructured.Unstructured{Object: auth}, "contentFrom", "secret", "name") != magnum.ChartComponentName(r.res.ReleaseName, "containerd-auth") {
				t.Errorf("auth.toml = %v, want it from the chart's containerd-auth Secret", auth)
			}
			sec := r.find(t, "Secret", magnum.ChartComponentName(r.res.ReleaseName, "containerd-auth"))
			if !strings.Contains(str(sec, "stringData", "auth.toml"), `[plugins."io.containerd.grpc.v1.cri".registry.configs."registry.example.org".auth]`) {
				t.Errorf("containerd-auth Secret = %v", sec.Object["stringData"])
			}
			for _, o := range r.objs {
				if o.GetKind() == "Secret" {
					continue
				}
				if b, _ := yaml.Marshal(o.Object); strings.Contains(string(b), registryPassword) {
					t.Errorf("%s %s holds the registry password", o.GetKind(), o.GetName())
				}
			}
		}},
}

// TestFeaturesOnEveryChart renders each feature fixture for every chart version: where
// the chart lacks the feature the render is refused, naming the label; elsewhere the real
// chart (plus the HelmRelease's post-renderers, applied as helm-controller applies them)
// produces CAPI objects carrying the setting, and the API server accepts every one of them
// and the HelmRelease itself (server-side dry run: zero rejections).
func TestFeaturesOnEveryChart(t *testing.T) {
	t.Parallel()
	for _, fc := range featureCases {
		for _, version := range chartVersions {
			t.Run(fc.name+"/"+version, func(t *testing.T) {
				t.Parallel()
				cfg := featureConfig(t, fc.name)
				res, err := generator.Render(featureEvent(t, fc.name, version), generator.MustSite(*cfg))
				if want, refused := fc.refusedOn[version]; refused {
					var fe v1alpha1.InputErrors
					if err == nil || !errors.As(err, &fe) || !strings.Contains(err.Error(), want[0]+": ") || !strings.Contains(err.Error(), want[1]) {
						t.Fatalf("chart %s: %v, want a refusal of %s (…%s…)", version, err, want[0], want[1])
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				ch, err := chartrender.LoadVersion(version)
				if errors.Is(err, chartrender.ErrNoCharts) {
					t.Skipf("skipping: %v", err)
				}
				if err != nil {
					t.Fatal(err)
				}
				raw, err := chartrender.Render(ch, res.ReleaseName, res.Namespace, helmValues(t, res))
				if err != nil {
					t.Fatalf("chart %s: %v", version, err)
				}
				objs, err := postRender(raw, res.Objects.HelmRelease.Spec.PostRenderers)
				if err != nil {
					t.Fatal(err)
				}
				if kinds(objs) != kinds(raw) {
					t.Errorf("post-rendering changed the objects: %s → %s", kinds(raw), kinds(objs))
				}
				r := rendered{res: res, objs: objs, raw: raw}
				fc.check(t, version, r)
				validate(t, version, r)
			})
		}
	}
}

// validate server-side applies (dry run) every object the chart rendered, after the
// post-renderers, and the generated HelmRelease: none may be rejected. Chart 0.10.1 writes
// CAPO v1alpha7, which the installed CAPO CRDs (0.14) no longer serve; those objects are
// left out (the generator warns about such charts).
func validate(t *testing.T, version string, r rendered) {
	t.Helper()
	if env == nil {
		testenv.Require(t, env)
		return
	}
	ctx := context.Background()
	if err := env.EnsureNamespace(ctx, r.res.Namespace); err != nil {
		t.Fatal(err)
	}
	hr, err := runtimeToUnstructured(r.res.Objects.HelmRelease)
	if err != nil {
		t.Fatal(err)
	}
	objs := append([]*unstructured.Unstructured{hr}, r.objs...)
	accepted := 0
	for _, o := range objs {
		if o.GetAPIVersion() == "infrastructure.cluster.x-k8s.io/v1alpha7" {
			continue
		}
		o = o.DeepCopy()
		if o.GetNamespace() == "" {
			o.SetNamespace(r.res.Namespace)
		}
		err := env.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner("magnum-gitops"), client.ForceOwnership, client.DryRunAll)
		if err != nil {
			t.Errorf("chart %s: %s %s rejected: %v", version, o.GroupVersionKind(), o.GetName(), err)
			continue
		}
		accepted++
	}
	if accepted < 10 {
		t.Errorf("only %d objects validated", accepted)
	}
}

func runtimeToUnstructured(obj any) (*unstructured.Unstructured, error) {
	b, err := generator.MarshalObject(obj)
	if err != nil {
		return nil, err
	}
	objs, err := chartrender.Parse(strings.NewReader(string(b)))
	if err != nil || len(objs) != 1 {
		return nil, fmt.Errorf("parse: %v (%d objects)", err, len(objs))
	}
	return objs[0], nil
}
