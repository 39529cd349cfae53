package servicechart

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/internal/chartrender"
	"github.com/magnum-gitops/magnum-gitops/internal/config"
)

// root is the repository root, seen from this package's directory.
const root = "../.."

func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	ch, err := Load(root)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// requiredValues are the values the chart cannot default: the repository, Flux's age key
// and the Secret references.
func requiredValues() map[string]any {
	return map[string]any{
		"config": map[string]any{
			"git":  map[string]any{"url": "https://git.example.org/cloud/magnum-clusters.git"},
			"sops": map[string]any{"age_recipients": []any{"age1e7uzf50uuk9pw9ghyujcnxwjlp9t99h946ad9zxmqrcr850h644qq5tnsz"}},
		},
		"secrets": map[string]any{
			"apiToken":  map[string]any{"name": "mg-api"},
			"gitToken":  map[string]any{"name": "mg-git"},
			"digestKey": map[string]any{"name": "mg-sops"},
		},
	}
}

// ciValues reads one of the chart's ci/ values files.
func ciValues(t *testing.T, name string) map[string]any {
	t.Helper()
	v, err := chartutil.ReadValuesFile(filepath.Join(root, Dir, "ci", name))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// objects renders the chart and indexes its objects by "Kind/name".
func objects(t *testing.T, ch *chart.Chart, namespace string, values map[string]any) map[string]*unstructured.Unstructured {
	t.Helper()
	m, err := Render(ch, "magnum-gitops", namespace, values)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := chartrender.Parse(strings.NewReader(m))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		k := o.GetKind() + "/" + o.GetName()
		if out[k] != nil {
			t.Fatalf("%s rendered twice", k)
		}
		out[k] = o
	}
	return out
}

// field reads a nested field, failing the test when it is missing.
func field(t *testing.T, o *unstructured.Unstructured, path ...string) any {
	t.Helper()
	if o == nil {
		t.Fatalf("no object to read %v from", path)
	}
	v, ok, err := unstructured.NestedFieldNoCopy(o.Object, path...)
	if err != nil || !ok {
		t.Fatalf("%s %s: no %s", o.GetKind(), o.GetName(), strings.Join(path, "."))
	}
	return v
}

// container is the Deployment's one container.
func container(t *testing.T, objs map[string]*unstructured.Unstructured) map[string]any {
	t.Helper()
	cs := field(t, objs["Deployment/magnum-gitops"], "spec", "template", "spec", "containers").([]any)
	if len(cs) != 1 {
		t.Fatalf("%d containers", len(cs))
	}
	return cs[0].(map[string]any)
}

// TestOneVersion: the chart's version and appVersion are the VERSION file's, and the image
// defaults to that tag.
func TestOneVersion(t *testing.T) {
	t.Parallel()
	ch := loadChart(t)
	v, err := os.ReadFile(filepath.Join(root, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.TrimSpace(string(v))
	if ch.Metadata.Version != want || ch.Metadata.AppVersion != want {
		t.Errorf("Chart.yaml version %q, appVersion %q; VERSION holds %q", ch.Metadata.Version, ch.Metadata.AppVersion, want)
	}
	objs := objects(t, ch, "magnum-gitops", requiredValues())
	if img := container(t, objs)["image"]; img != "ghcr.io/magnum-gitops/magnum-gitops:"+want {
		t.Errorf("image %v, want the appVersion's tag", img)
	}
}

// TestRenderDefaults: with only what it requires, the chart renders two replicas with
// leader election, hardened, probed, spread, with a PodDisruptionBudget and a
// NetworkPolicy, and nothing opt-in.
func TestRenderDefaults(t *testing.T) {
	t.Parallel()
	objs := objects(t, loadChart(t), "magnum-gitops", requiredValues())
	dep := objs["Deployment/magnum-gitops"]
	if r := field(t, dep, "spec", "replicas"); r != float64(2) {
		t.Errorf("replicas %v", r)
	}
	pod := field(t, dep, "spec", "template", "spec", "securityContext").(map[string]any)
	if pod["runAsNonRoot"] != true || pod["runAsUser"] != float64(65532) || !reflect.DeepEqual(pod["seccompProfile"], map[string]any{"type": "RuntimeDefault"}) {
		t.Errorf("pod securityContext %v", pod)
	}
	c := container(t, objs)
	sc := c["securityContext"].(map[string]any)
	if sc["readOnlyRootFilesystem"] != true || sc["allowPrivilegeEscalation"] != false ||
		!reflect.DeepEqual(sc["capabilities"], map[string]any{"drop": []any{"ALL"}}) {
		t.Errorf("container securityContext %v", sc)
	}
	for probe, path := range map[string]string{"startupProbe": "/healthz", "livenessProbe": "/healthz", "readinessProbe": "/readyz"} {
		p, _ := c[probe].(map[string]any)
		if get, _ := p["httpGet"].(map[string]any); get["path"] != path || get["port"] != "ops" {
			t.Errorf("%s %v, want %s on the ops port", probe, p, path)
		}
	}
	if args := c["args"].([]any); !slices.Contains(args, any("--leader-elect=true")) {
		t.Errorf("args %v", args)
	}
	if c["resources"].(map[string]any)["limits"] == nil {
		t.Error("no resource limits")
	}
	for _, tsc := range field(t, dep, "spec", "template", "spec", "topologySpreadConstraints").([]any) {
		if tsc.(map[string]any)["labelSelector"] == nil {
			t.Errorf("topology spread constraint without the pods' labels: %v", tsc)
		}
	}
	if m := field(t, objs["PodDisruptionBudget/magnum-gitops"], "spec", "minAvailable"); m != float64(1) {
		t.Errorf("PodDisruptionBudget minAvailable %v", m)
	}
	if objs["NetworkPolicy/magnum-gitops"] == nil {
		t.Error("no NetworkPolicy")
	}
	rules := field(t, objs["Role/magnum-gitops-leader-election"], "rules").([]any)
	if res := rules[0].(map[string]any)["resources"]; !reflect.DeepEqual(res, []any{"leases"}) {
		t.Errorf("leader election Role on %v", res)
	}
	if typ := field(t, objs["Service/magnum-gitops"], "spec", "type"); typ != "ClusterIP" {
		t.Errorf("Service type %v", typ)
	}
	for _, k := range []string{"Namespace/magnum-gitops", "ServiceMonitor/magnum-gitops", "PrometheusRule/magnum-gitops", "Certificate/magnum-gitops", "Ingress/magnum-gitops"} {
		if objs[k] != nil {
			t.Errorf("%s rendered without being asked for", k)
		}
	}
}

// TestRenderAllOptions: every opt-in object is there, shaped as its operator reads it
// (TestServiceChartAccepted in internal/apivalidation applies them to a real API server).
func TestRenderAllOptions(t *testing.T) {
	t.Parallel()
	objs := objects(t, loadChart(t), "magnum-gitops-all", ciValues(t, "all-options-values.yaml"))
	checks := []struct {
		object string
		path   []string
		want   any
	}{
		{"Namespace/magnum-gitops-all", []string{"metadata", "labels", "pod-security.kubernetes.io/enforce"}, "restricted"},
		{"Deployment/magnum-gitops", []string{"spec", "replicas"}, float64(3)},
		{"Service/magnum-gitops", []string{"spec", "type"}, "LoadBalancer"},
		{"Service/magnum-gitops", []string{"spec", "loadBalancerSourceRanges"}, []any{"192.0.2.0/24"}},
		{"Ingress/magnum-gitops", []string{"spec", "ingressClassName"}, "nginx"},
		{"ServiceMonitor/magnum-gitops", []string{"spec", "endpoints"}, []any{map[string]any{"port": "ops", "path": "/metrics", "interval": "30s", "scrapeTimeout": "10s"}}},
		{"Certificate/magnum-gitops", []string{"spec", "secretName"}, "magnum-gitops-tls"},
		{"Certificate/magnum-gitops", []string{"spec", "issuerRef", "kind"}, "ClusterIssuer"},
		{"Role/magnum-gitops-reconcile-request", []string{"metadata", "namespace"}, "flux-system"},
	}
	for _, c := range checks {
		if got := field(t, objs[c.object], c.path...); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s %s: %v, want %v", c.object, strings.Join(c.path, "."), got, c.want)
		}
	}
	groups := field(t, objs["PrometheusRule/magnum-gitops"], "spec", "groups").([]any)
	var alerts []string
	for _, r := range groups[0].(map[string]any)["rules"].([]any) {
		alerts = append(alerts, r.(map[string]any)["alert"].(string))
	}
	if !slices.Contains(alerts, "MagnumGitopsDown") || !slices.Contains(alerts, "MagnumGitopsSecretReloadRefused") || !slices.Contains(alerts, "MagnumGitopsConflicts") {
		t.Errorf("alerts %v: want the chart's and the additional ones", alerts)
	}
	c := container(t, objs)
	if img := c["image"].(string); !strings.Contains(img, "@sha256:") {
		t.Errorf("image %s, want it pinned by digest", img)
	}
	if args := c["args"].([]any); !slices.Contains(args, any("--source=magnum")) {
		t.Errorf("args %v: extraArgs missing", args)
	}
}

// TestRenderedConfigLoads: the ConfigMap holds a --config file serve loads, and every file
// it names is one the Deployment mounts, from the Secret and key the values name.
func TestRenderedConfigLoads(t *testing.T) {
	t.Parallel()
	ch := loadChart(t)
	for _, tc := range []struct {
		name   string
		values map[string]any
		files  []string // beyond the API token and the digest key
	}{
		{"required values", requiredValues(), []string{"git-token"}},
		{"deploy/service", ciValues(t, "deploy-service-values.yaml"), []string{"git-token"}},
		{"all options", ciValues(t, "all-options-values.yaml"), []string{"ssh-key", "known_hosts", "signing-key", "clouds.yaml", "tls.crt", "tls.key", "ca.crt"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := objects(t, ch, "magnum-gitops", tc.values)
			path := filepath.Join(t.TempDir(), "config.yaml")
			data := field(t, objs["ConfigMap/magnum-gitops"], "data", "config.yaml").(string)
			if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
				t.Fatal(err)
			}
			c, err := config.Load(path)
			if err != nil {
				t.Fatalf("serve refuses the rendered config: %v\n%s", err, data)
			}
			named := slices.Concat(c.Serve.TokenFiles, []string{c.Sops.DigestKeyFile, c.Git.Auth.TokenFile, c.Git.Auth.SSHKeyFile,
				c.Git.Auth.KnownHostsFile, c.Git.SigningKeyFile, c.OpenStack.CloudsFile, c.Serve.TLS.CertFile, c.Serve.TLS.KeyFile, c.Serve.TLS.ClientCAFile})
			named = slices.DeleteFunc(named, func(s string) bool { return s == "" })
			mounted := mountedFiles(t, objs["Deployment/magnum-gitops"])
			for _, f := range named {
				if !mounted[f] {
					t.Errorf("the config names %s, which no volume mounts (mounted: %v)", f, mounted)
				}
			}
			var base []string
			for _, f := range named {
				base = append(base, filepath.Base(f))
			}
			for _, want := range append([]string{"api-token", "digest-key"}, tc.files...) {
				if !slices.Contains(base, want) {
					t.Errorf("the config names no %s file: %v", want, named)
				}
			}
		})
	}
}

// mountedFiles lists the files the Deployment's Secret volumes put in the container.
func mountedFiles(t *testing.T, dep *unstructured.Unstructured) map[string]bool {
	t.Helper()
	spec := field(t, dep, "spec", "template", "spec").(map[string]any)
	items := map[string][]string{} // volume → item paths
	for _, v := range spec["volumes"].([]any) {
		v := v.(map[string]any)
		var sources []any
		if p, ok := v["projected"].(map[string]any); ok {
			for _, s := range p["sources"].([]any) {
				sources = append(sources, s.(map[string]any)["secret"])
			}
		}
		if s, ok := v["secret"]; ok {
			sources = append(sources, s)
		}
		for _, s := range sources {
			for _, it := range s.(map[string]any)["items"].([]any) {
				items[v["name"].(string)] = append(items[v["name"].(string)], it.(map[string]any)["path"].(string))
			}
		}
	}
	out := map[string]bool{}
	c := spec["containers"].([]any)[0].(map[string]any)
	for _, m := range c["volumeMounts"].([]any) {
		m := m.(map[string]any)
		for _, p := range items[m["name"].(string)] {
			out[filepath.Join(m["mountPath"].(string), p)] = true
		}
	}
	return out
}

// TestSchemaKnowsTheConfigKeys: values.schema.json allows exactly the top-level keys of
// the --config file, so a misspelt section fails at install, not when serve starts.
func TestSchemaKnowsTheConfigKeys(t *testing.T) {
	t.Parallel()
	var schema struct {
		Properties struct {
			Config struct {
				Properties map[string]any `json:"properties"`
			} `json:"config"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(loadChart(t).Schema, &schema); err != nil {
		t.Fatal(err)
	}
	var inSchema []string
	for k := range schema.Properties.Config.Properties {
		inSchema = append(inSchema, k)
	}
	slices.Sort(inSchema)
	if want := jsonKeys(reflect.TypeFor[config.File]()); !slices.Equal(inSchema, want) {
		t.Errorf("values.schema.json config keys %v, the --config file's %v", inSchema, want)
	}
}

// jsonKeys lists the JSON keys of a struct, inlined structs' included, sorted.
func jsonKeys(typ reflect.Type) []string {
	var out []string
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-":
		case name == "" && (f.Anonymous || strings.Contains(opts, "inline")):
			out = append(out, jsonKeys(f.Type)...)
		case name != "":
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// TestValuesYAMLHasNoUnknownKey: the chart's own values pass its schema (Helm checks the
// merged values, so a key values.yaml has and the schema lacks would refuse every install).
func TestValuesYAMLHasNoUnknownKey(t *testing.T) {
	t.Parallel()
	ch := loadChart(t)
	var vals map[string]any
	for _, f := range ch.Raw {
		if f.Name == chartutil.ValuesfileName {
			if err := yaml.Unmarshal(f.Data, &vals); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := chartutil.ValidateAgainstSchema(ch, vals); err != nil {
		t.Error(err)
	}
}

// TestRenderRefuses: a value of the wrong type, an unknown value, a missing Secret
// reference or a key the chart owns fails the render (helm install and helm-controller
// alike), with a message naming the value.
func TestRenderRefuses(t *testing.T) {
	t.Parallel()
	ch := loadChart(t)
	for _, tc := range []struct {
		name  string
		set   func(v map[string]any)
		names string
	}{
		{"replicas as text", func(v map[string]any) { v["replicaCount"] = "two" }, "replicaCount"},
		{"a port as text", func(v map[string]any) { v["service"] = map[string]any{"port": "8080"} }, "service/port"},
		{"a service type unknown", func(v map[string]any) { v["service"] = map[string]any{"type": "External"} }, "service/type"},
		{"a boolean as text", func(v map[string]any) { v["tls"] = map[string]any{"enabled": "yes"} }, "tls/enabled"},
		{"a misspelt value", func(v map[string]any) { v["replicas"] = 3 }, "replicas"},
		{"a misspelt config section", func(v map[string]any) { v["config"].(map[string]any)["sop"] = map[string]any{} }, "sop"},
		{"a CPU request that is no quantity", func(v map[string]any) {
			v["resources"] = map[string]any{"requests": map[string]any{"cpu": "lots"}}
		}, "resources/requests/cpu"},
		{"an image digest malformed", func(v map[string]any) { v["image"] = map[string]any{"digest": "latest"} }, "image/digest"},
		{"age recipients as one string", func(v map[string]any) {
			v["config"].(map[string]any)["sops"] = map[string]any{"age_recipients": "age1x"}
		}, "config/sops/age_recipients"},
		{"no API token Secret", func(v map[string]any) { delete(v["secrets"].(map[string]any), "apiToken") }, "secrets.apiToken.name"},
		{"no Git credentials", func(v map[string]any) { delete(v["secrets"].(map[string]any), "gitToken") }, "secrets.gitToken.name"},
		{"no digest key Secret", func(v map[string]any) { delete(v["secrets"].(map[string]any), "digestKey") }, "secrets.digestKey.name"},
		{"no Git URL", func(v map[string]any) { delete(v["config"].(map[string]any), "git") }, "config.git.url"},
		{"no age recipient", func(v map[string]any) { delete(v["config"].(map[string]any), "sops") }, "config.sops.age_recipients"},
		{"a file path the chart sets", func(v map[string]any) {
			v["config"].(map[string]any)["serve"] = map[string]any{"token_files": []any{"/tmp/t"}}
		}, "config.serve.token_files"},
		{"TLS without a certificate", func(v map[string]any) { v["tls"] = map[string]any{"enabled": true} }, "tls.secretName"},
		{"cert-manager without an issuer", func(v map[string]any) {
			v["tls"] = map[string]any{"enabled": true, "certManager": map[string]any{"enabled": true}}
		}, "tls.certManager.issuerRef.name"},
		{"an ingress without hosts", func(v map[string]any) { v["ingress"] = map[string]any{"enabled": true} }, "ingress.hosts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := requiredValues()
			tc.set(v)
			_, err := Render(ch, "magnum-gitops", "magnum-gitops", v)
			if !errors.Is(err, ErrInvalidValues) || !strings.Contains(err.Error(), tc.names) {
				t.Fatalf("got %v, want ErrInvalidValues naming %s", err, tc.names)
			}
			t.Log(err)
		})
	}
}
