package servicechart

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
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
	// TLS by default: HTTPS on 8443 from the Secret <fullname>-tls, which the operator
	// creates (no Certificate unless asked for).
	if api := apiPorts(t, objs); !reflect.DeepEqual(api, map[string]any{"container": float64(8443), "service": float64(8443), "appProtocol": "https"}) {
		t.Errorf("API ports %v, want HTTPS on 8443", api)
	}
	if s := secretVolume(t, dep, "tls"); s != "magnum-gitops-tls" {
		t.Errorf("TLS volume from Secret %q, want magnum-gitops-tls", s)
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
		{"Service/magnum-gitops", []string{"spec", "ports"}, []any{
			map[string]any{"name": "api", "port": float64(443), "targetPort": "api", "appProtocol": "https"},
			map[string]any{"name": "ops", "port": float64(8081), "targetPort": "ops"}}},
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

// TestRenderReconcileRequest: serve.reconcile_request's Role lets serve patch what it
// annotates and nothing else: GitRepositories in Flux's namespace (the named one alone in
// the single layout), or with format argo the named Application in Argo CD's namespace.
func TestRenderReconcileRequest(t *testing.T) {
	t.Parallel()
	ch := loadChart(t)
	for _, tc := range []struct {
		name      string
		config    map[string]any
		namespace string
		rule      map[string]any
	}{
		{"flux", map[string]any{"flux": map[string]any{"layout": "single"},
			"serve": map[string]any{"reconcile_request": map[string]any{"name": "magnum-clusters"}}}, "flux-system",
			map[string]any{"apiGroups": []any{"source.toolkit.fluxcd.io"}, "resources": []any{"gitrepositories"}, "verbs": []any{"patch"},
				"resourceNames": []any{"magnum-clusters"}}},
		{"argo", map[string]any{"format": "argo", "argo": map[string]any{"namespace": "gitops"}, "flux": map[string]any{"layout": "single"},
			"serve": map[string]any{"reconcile_request": map[string]any{"name": "magnum-clusters"}}}, "gitops",
			map[string]any{"apiGroups": []any{"argoproj.io"}, "resources": []any{"applications"}, "verbs": []any{"patch"},
				"resourceNames": []any{"magnum-clusters"}}},
		// Each namespace's parent Application too, whose names RBAC cannot list ahead.
		{"argo per-namespace", map[string]any{"format": "argo", "flux": map[string]any{"layout": "per-namespace"},
			"serve": map[string]any{"reconcile_request": map[string]any{"name": "magnum-clusters"}}}, "argocd",
			map[string]any{"apiGroups": []any{"argoproj.io"}, "resources": []any{"applications"}, "verbs": []any{"patch"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			values := requiredValues()
			maps.Copy(values["config"].(map[string]any), tc.config)
			objs := objects(t, ch, "magnum-gitops", values)
			role := objs["Role/magnum-gitops-reconcile-request"]
			if got := field(t, role, "metadata", "namespace"); got != tc.namespace {
				t.Errorf("Role in %v, want %s", got, tc.namespace)
			}
			if got := field(t, role, "rules"); !reflect.DeepEqual(got, []any{tc.rule}) {
				t.Errorf("rules %v, want %v", got, []any{tc.rule})
			}
			if got := field(t, objs["RoleBinding/magnum-gitops-reconcile-request"], "metadata", "namespace"); got != tc.namespace {
				t.Errorf("RoleBinding in %v, want %s", got, tc.namespace)
			}
		})
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
		{"required values", requiredValues(), []string{"git-token", "tls.crt", "tls.key"}},
		{"deploy/service", ciValues(t, "deploy-service-values.yaml"), []string{"git-token", "tls.crt", "tls.key"}},
		{"all options", ciValues(t, "all-options-values.yaml"), []string{"ssh-key", "known_hosts", "signing-key", "clouds.yaml", "tls.crt", "tls.key", "ca.crt"}},
		{"TLS off", withTLS(requiredValues(), map[string]any{"enabled": false}), []string{"git-token"}},
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
			// serve's listen decision on the pod's address: HTTPS, or plain HTTP only as the
			// explicit opt-out, which serve warns of.
			plain, err := c.Serve.CheckListen(c.Serve.Listen, false)
			if err != nil {
				t.Fatalf("serve refuses to listen with the rendered config: %v", err)
			}
			if tlsOn := c.Serve.TLS.CertFile != ""; plain == tlsOn {
				t.Errorf("TLS %v, plain HTTP on %s warned of: %v", tlsOn, c.Serve.Listen, plain)
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
		{"plain HTTP asked for in config", func(v map[string]any) {
			v["config"].(map[string]any)["serve"] = map[string]any{"allow_plain_http": true}
		}, "config.serve.allow_plain_http: set by the chart (tls.enabled=false)"},
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

// withTLS sets values' tls.
func withTLS(v map[string]any, tls map[string]any) map[string]any {
	v["tls"] = tls
	return v
}

// apiPorts is the API's container port, Service port and appProtocol.
func apiPorts(t *testing.T, objs map[string]*unstructured.Unstructured) map[string]any {
	t.Helper()
	out := map[string]any{}
	for _, p := range container(t, objs)["ports"].([]any) {
		if p := p.(map[string]any); p["name"] == "api" {
			out["container"] = p["containerPort"]
		}
	}
	for _, p := range field(t, objs["Service/magnum-gitops"], "spec", "ports").([]any) {
		if p := p.(map[string]any); p["name"] == "api" {
			out["service"] = p["port"]
			if ap, ok := p["appProtocol"]; ok {
				out["appProtocol"] = ap
			}
		}
	}
	return out
}

// secretVolume is the Secret the Deployment's volume name holds, "" without that volume.
func secretVolume(t *testing.T, dep *unstructured.Unstructured, name string) string {
	t.Helper()
	for _, v := range field(t, dep, "spec", "template", "spec", "volumes").([]any) {
		if v := v.(map[string]any); v["name"] == name {
			s, _ := v["secret"].(map[string]any)
			n, _ := s["secretName"].(string)
			return n
		}
	}
	return ""
}

// TestRenderTLS: where the certificate comes from, and the explicit opt-out. The Secret is
// <fullname>-tls unless tls.secretName names another, cert-manager issuing into the same;
// tls.enabled=false serves plain HTTP on 8080, mounts no certificate and writes
// serve.allow_plain_http, so that serve starts (and warns).
func TestRenderTLS(t *testing.T) {
	t.Parallel()
	ch := loadChart(t)
	issuer := map[string]any{"name": "magnum-ca", "kind": "ClusterIssuer"}
	for _, tc := range []struct {
		name        string
		tls         map[string]any
		secret      string // the TLS volume's and Certificate's Secret; "": none
		certificate bool
		ports       map[string]any
		plain       bool // serve.allow_plain_http in the config
	}{
		{"an existing Secret by name", map[string]any{"secretName": "api-cert"}, "api-cert", false,
			map[string]any{"container": float64(8443), "service": float64(8443), "appProtocol": "https"}, false},
		{"cert-manager", map[string]any{"certManager": map[string]any{"enabled": true, "issuerRef": issuer}}, "magnum-gitops-tls", true,
			map[string]any{"container": float64(8443), "service": float64(8443), "appProtocol": "https"}, false},
		{"cert-manager into a named Secret", map[string]any{"secretName": "api-cert", "certManager": map[string]any{"enabled": true, "issuerRef": issuer}}, "api-cert", true,
			map[string]any{"container": float64(8443), "service": float64(8443), "appProtocol": "https"}, false},
		{"off", map[string]any{"enabled": false}, "", false,
			map[string]any{"container": float64(8080), "service": float64(8080)}, true},
		{"off, cert-manager ignored", map[string]any{"enabled": false, "certManager": map[string]any{"enabled": true, "issuerRef": issuer}}, "", false,
			map[string]any{"container": float64(8080), "service": float64(8080)}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			objs := objects(t, ch, "magnum-gitops", withTLS(requiredValues(), tc.tls))
			if got := secretVolume(t, objs["Deployment/magnum-gitops"], "tls"); got != tc.secret {
				t.Errorf("TLS volume from Secret %q, want %q", got, tc.secret)
			}
			cert := objs["Certificate/magnum-gitops"]
			if (cert != nil) != tc.certificate {
				t.Fatalf("Certificate rendered: %v, want %v", cert != nil, tc.certificate)
			}
			if cert != nil {
				if s := field(t, cert, "spec", "secretName"); s != tc.secret {
					t.Errorf("Certificate into Secret %v, want %s", s, tc.secret)
				}
			}
			if got := apiPorts(t, objs); !reflect.DeepEqual(got, tc.ports) {
				t.Errorf("API ports %v, want %v", got, tc.ports)
			}
			var cfg config.File
			if err := yaml.Unmarshal([]byte(field(t, objs["ConfigMap/magnum-gitops"], "data", "config.yaml").(string)), &cfg); err != nil {
				t.Fatal(err)
			}
			want := fmt.Sprintf(":%v", tc.ports["container"])
			if cfg.Serve.Listen != want || cfg.Serve.AllowPlainHTTP != tc.plain || (cfg.Serve.TLS.CertFile != "") == tc.plain {
				t.Errorf("serve: listen %q, allow_plain_http %v, tls %+v; want %s, %v", cfg.Serve.Listen, cfg.Serve.AllowPlainHTTP, cfg.Serve.TLS, want, tc.plain)
			}
		})
	}
}

// notes renders the chart's NOTES.txt, what helm install prints.
func notes(t *testing.T, ch *chart.Chart, values map[string]any) string {
	t.Helper()
	raw, err := json.Marshal(values)
	if err != nil {
		t.Fatal(err)
	}
	vals, err := chartutil.ReadValues(raw)
	if err != nil {
		t.Fatal(err)
	}
	install := action.NewInstall(&action.Configuration{})
	install.ClientOnly, install.DryRun, install.Replace = true, true, true
	install.ReleaseName, install.Namespace = "magnum-gitops", "magnum-gitops"
	kv := KubeVersion
	install.KubeVersion = &kv
	rel, err := install.Run(ch, vals.AsMap())
	if err != nil {
		t.Fatal(err)
	}
	return rel.Info.Notes
}

// TestNotes: what helm install prints tells the operator how to get the certificate (a
// cert-manager Certificate, else kubectl create secret tls), and the driver shim's
// endpoint and ca_file; with TLS off it warns, and points the shim at the proxy in front.
func TestNotes(t *testing.T) {
	t.Parallel()
	ch := loadChart(t)
	lb := func(v map[string]any) map[string]any {
		v["service"] = map[string]any{"type": "LoadBalancer"}
		return v
	}
	for _, tc := range []struct {
		name      string
		values    map[string]any
		want, not []string
	}{
		{"defaults", requiredValues(), []string{
			"tls: Secret magnum-gitops-tls",
			"kind: Certificate", "secretName: magnum-gitops-tls", "dnsNames: [magnum-gitops, magnum-gitops.magnum-gitops, magnum-gitops.magnum-gitops.svc]",
			"kubectl -n magnum-gitops create secret tls magnum-gitops-tls --cert=tls.crt --key=tls.key",
			"endpoint = https://magnum-gitops.magnum-gitops.svc:8443",
			"ca_file = ", "get secret magnum-gitops-tls -o jsonpath='{.data.ca\\.crt}'",
		}, []string{"WARNING", "http://"}},
		{"cert-manager", withTLS(requiredValues(), map[string]any{"certManager": map[string]any{"enabled": true, "issuerRef": map[string]any{"name": "magnum-ca", "kind": "ClusterIssuer"}}}), []string{
			"cert-manager issues the API's certificate into Secret magnum-gitops-tls", "ClusterIssuer magnum-ca",
			"endpoint = https://magnum-gitops.magnum-gitops.svc:8443", "ca_file = ",
		}, []string{"create secret tls", "WARNING"}},
		{"a LoadBalancer", lb(requiredValues()), []string{
			"endpoint = https://$(kubectl -n magnum-gitops get service magnum-gitops", "):8443", "tls.certManager.ipAddresses", "ca_file = ",
		}, nil},
		{"TLS off", withTLS(requiredValues(), map[string]any{"enabled": false}), []string{
			"WARNING: tls.enabled=false", "plain HTTP on port 8080",
			"endpoint = https://YOUR-TLS-TERMINATING-PROXY (forwarding to Service magnum-gitops, port 8080)", "ca_file = a file holding the CA that issued the proxy's certificate",
		}, []string{"endpoint = http://", "create secret tls", "tls: Secret", "magnum-gitops-tls"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			n := notes(t, ch, tc.values)
			for _, w := range tc.want {
				if !strings.Contains(n, w) {
					t.Errorf("the notes lack %q:\n%s", w, n)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(n, w) {
					t.Errorf("the notes hold %q:\n%s", w, n)
				}
			}
		})
	}
}
