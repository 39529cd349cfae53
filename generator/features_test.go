package generator_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"

	corev1 "k8s.io/api/core/v1"

	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/internal/fixturetest"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
)

// registryPassword is the fake password of the registries fixture; no output may hold it
// except the (encrypted) registry Secret.
const registryPassword = testenv.RegistryPassword

// featureEvent decodes fixtures/features/<name>.yaml. The feature fixtures live apart from
// fixtures/events so that the replayed repository, the demo and the end-to-end tests keep
// their outputs.
func featureEvent(t testing.TB, name string) *v1alpha1.ClusterEvent {
	t.Helper()
	return fixturetest.EventFile(t, filepath.Join("..", "fixtures", "features", name+".yaml"))
}

// featureFixtures names every feature fixture and the configuration it is rendered with.
var featureFixtures = []string{"oidc", "placement", "certificate-rotation", "scale-from-zero", "apiserver", "registries"}

func featureConfig(t testing.TB, name string) *generator.Config {
	if name == "registries" {
		return testenv.RegistriesConfig(t)
	}
	return defaultConfig()
}

// redactFeatureSecrets masks the registry password as redactedSecrets masks the others.
var redactFeatureSecrets = &generator.SecretEncoding{Suffix: ".yaml", Encode: func(s *corev1.Secret) ([]byte, error) {
	c := s.DeepCopy()
	if v, ok := c.StringData[generator.RegistryValuesKey]; ok {
		c.StringData[generator.RegistryValuesKey] = strings.ReplaceAll(v, registryPassword, "<redacted>")
	}
	return redact(c)
}}

// TestFeatureGolden renders each feature fixture and compares its values and its change
// with fixtures/golden/features/<name>/.
func TestFeatureGolden(t *testing.T) {
	t.Parallel()
	for _, name := range featureFixtures {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg := featureConfig(t, name)
			res, err := render(featureEvent(t, name), cfg)
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, filepath.Join("features", name, "render.json"), mustJSON(t, map[string]any{
				"chart": res.Chart, "deviations": res.Deviations, "values": res.Values}))
			fs, err := res.Files(cfg, generator.FileOptions{Secrets: redactFeatureSecrets})
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, filepath.Join("features", name, "change.yaml"), fs.Stream())
		})
	}
}

// TestFeaturesAbsentChangeNothing: the feature fixtures without their feature labels
// render exactly what they render without any feature code (the existing goldens prove it
// for every driver fixture; this proves it for the features' own events).
func TestFeaturesAbsentChangeNothing(t *testing.T) {
	t.Parallel()
	for _, name := range featureFixtures {
		ev := featureEvent(t, name)
		for k := range ev.Cluster.Labels {
			if strings.HasPrefix(k, "oidc_") || strings.Contains(k, "availability_zone") || strings.Contains(k, "server_group") ||
				strings.HasPrefix(k, "certificates_") || strings.HasPrefix(k, "api_server_") || strings.HasPrefix(k, "audit_") ||
				k == "registry_mirror_set" {
				delete(ev.Cluster.Labels, k)
			}
		}
		delete(ev.ClusterTemplate.Labels, "oidc_username_prefix")
		for i := range ev.NodeGroups {
			ev.NodeGroups[i].Labels = nil
			if ev.NodeGroups[i].MinNodeCount != nil && *ev.NodeGroups[i].MinNodeCount == 0 {
				ev.NodeGroups[i].MinNodeCount = intp(1)
				ev.NodeGroups[i].NodeCount = 1
			}
		}
		res, err := render(ev, defaultConfig())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		hr := res.Objects.HelmRelease
		if hr.Spec.PostRenderers != nil || hr.Spec.ValuesFrom != nil {
			t.Errorf("%s: post-renderers or valuesFrom without a feature label", name)
		}
		for _, k := range []string{"oidc", "registryMirrors", "trustedCAs"} {
			if _, ok := res.Values[k]; ok {
				t.Errorf("%s: %s rendered without its label", name, k)
			}
		}
		cp := res.Values["controlPlane"].(map[string]any)
		for _, k := range []string{"failureDomains", "omitFailureDomain", "serverGroupId", "kubeadmConfigSpec", "certificatesExpiryDays"} {
			if _, ok := cp[k]; ok {
				t.Errorf("%s: controlPlane.%s rendered without its label", name, k)
			}
		}
	}
}

func mutateFeature(name string, mutate func(*v1alpha1.ClusterEvent, *generator.Config)) func(t *testing.T) (*generator.Result, error) {
	return func(t *testing.T) (*generator.Result, error) {
		ev := featureEvent(t, name)
		cfg := featureConfig(t, name)
		if mutate != nil {
			mutate(ev, cfg)
		}
		return render(ev, cfg)
	}
}

func withLabels(kv ...string) func(*v1alpha1.ClusterEvent, *generator.Config) {
	return func(ev *v1alpha1.ClusterEvent, _ *generator.Config) {
		for i := 0; i < len(kv); i += 2 {
			ev.Cluster.Labels[kv[i]] = kv[i+1]
		}
	}
}

func onChart(version string, then func(*v1alpha1.ClusterEvent, *generator.Config)) func(*v1alpha1.ClusterEvent, *generator.Config) {
	return func(ev *v1alpha1.ClusterEvent, cfg *generator.Config) {
		ev.ClusterTemplate.Labels["capi_helm_chart_version"] = version
		if then != nil {
			then(ev, cfg)
		}
	}
}

func argo(then func(*v1alpha1.ClusterEvent, *generator.Config)) func(*v1alpha1.ClusterEvent, *generator.Config) {
	return func(ev *v1alpha1.ClusterEvent, cfg *generator.Config) {
		cfg.Format = generator.FormatArgo
		if then != nil {
			then(ev, cfg)
		}
	}
}

// TestFeatureRefusals: every bad feature input, and every feature on a chart version (or
// output format) that cannot carry it, is refused naming the label and the rule, and
// nothing is rendered.
func TestFeatureRefusals(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name        string
		render      func(t *testing.T) (*generator.Result, error)
		field, rule string
	}{
		{"OIDC on chart 0.10.1", mutateFeature("oidc", onChart("0.10.1", nil)),
			"cluster.labels.oidc_issuer_url", "chart 0.10.1 has no oidc values (it needs openstack-cluster 0.11.0 or newer)"},
		{"OIDC issuer over http", mutateFeature("oidc", withLabels("oidc_issuer_url", "http://sso.example.org")),
			"cluster.labels.oidc_issuer_url", "must be an https:// URL"},
		{"OIDC issuer with a fragment", mutateFeature("oidc", withLabels("oidc_issuer_url", "https://sso.example.org/#x")),
			"cluster.labels.oidc_issuer_url", "query or fragment"},
		{"OIDC issuer without a client id", mutateFeature("oidc", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) {
			delete(ev.Cluster.Labels, "oidc_client_id")
		}), "cluster.labels.oidc_issuer_url", "needs oidc_client_id"},
		{"OIDC claim without an issuer", mutateFeature("oidc", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) {
			delete(ev.Cluster.Labels, "oidc_issuer_url")
		}), "cluster.labels.oidc_client_id", "needs oidc_issuer_url"},
		{"OIDC claim with a space", mutateFeature("oidc", withLabels("oidc_groups_claim", "my groups")),
			"cluster.labels.oidc_groups_claim", "must not contain spaces"},
		{"availability zone YAML would read as a number", mutateFeature("placement", withLabels("availability_zone", "1")),
			"cluster.labels.availability_zone", "not an availability zone name"},
		{"availability zone with a space on a node group", mutateFeature("placement", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) {
			ev.NodeGroups[2].Labels["availability_zone"] = "zone b"
		}), "nodegroups[workers-az2].labels.availability_zone", "not an availability zone name"},
		{"control plane zones listed twice", mutateFeature("placement", withLabels("control_plane_availability_zones", "az-1,az-1")),
			"cluster.labels.control_plane_availability_zones", "listed twice"},
		{"control plane zones all blank", mutateFeature("placement", withLabels("control_plane_availability_zones", " , ")),
			"cluster.labels.control_plane_availability_zones", "lists no zone"},
		{"server group by name", mutateFeature("placement", withLabels("control_plane_server_group_id", "anti-affinity")),
			"cluster.labels.control_plane_server_group_id", "not a Nova server group UUID"},
		{"certificate expiry below CAPI's minimum", mutateFeature("certificate-rotation", withLabels("certificates_expiry_days", "3")),
			"cluster.labels.certificates_expiry_days", "want an integer from 7 to 364"},
		{"certificate expiry not a number", mutateFeature("certificate-rotation", withLabels("certificates_expiry_days", "soon")),
			"cluster.labels.certificates_expiry_days", "want an integer"},
		{"certificate rotation under Argo CD on chart 0.27.0", mutateFeature("certificate-rotation", argo(nil)),
			"cluster.labels.certificates_expiry_days", "Argo CD Applications have none"},
		{"scale from zero on chart 0.24.1", mutateFeature("scale-from-zero", onChart("0.24.1", nil)),
			"nodegroups[gpu-a100].min_node_count", "chart 0.24.1 cannot scale from zero (openstack-cluster 0.26.0 or newer can)"},
		{"scale from zero on chart 0.10.1", mutateFeature("scale-from-zero", onChart("0.10.1", nil)),
			"nodegroups[gpu-a100].min_node_count", "Min node count must be greater than or equal to 1"},
		{"scale from zero without the flavor's size", mutateFeature("scale-from-zero", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) {
			delete(ev.Resolved.Flavors, "g1.a100")
		}), "nodegroups[gpu-a100].flavor_id", "needs the size of flavor \"g1.a100\" in resolved.flavors"},
		{"scale from zero under Argo CD", mutateFeature("scale-from-zero", argo(nil)),
			"nodegroups[gpu-a100].min_node_count", "Argo CD Applications have none"},
		{"GPU type without a count", mutateFeature("scale-from-zero", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) {
			ev.NodeGroups[2].Labels = v1alpha1.Labels{"autoscaler_gpu_type": "nvidia.com/gpu"}
		}), "nodegroups[gpu-a100].labels.autoscaler_gpu_type", "needs autoscaler_gpu_count"},
		{"GPU count out of range", mutateFeature("scale-from-zero", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) {
			ev.NodeGroups[2].Labels = v1alpha1.Labels{"autoscaler_gpu_count": "0"}
		}), "nodegroups[gpu-a100].labels.autoscaler_gpu_count", "want an integer from 1 to 64"},
		{"cert SAN that is no name", mutateFeature("apiserver", withLabels("api_server_cert_sans", "api.example.org,not a name")),
			"cluster.labels.api_server_cert_sans", "\"not a name\" is neither an IP address nor a DNS name"},
		{"insecure cipher suite", mutateFeature("apiserver", withLabels("api_server_tls_cipher_suites", "TLS_RSA_WITH_RC4_128_SHA")),
			"cluster.labels.api_server_tls_cipher_suites", "not a secure TLS cipher suite"},
		{"audit flag that is no boolean", mutateFeature("apiserver", withLabels("audit_log_enabled", "maybe")),
			"cluster.labels.audit_log_enabled", "want true or false"},
		{"audit limit without audit", mutateFeature("apiserver", withLabels("audit_log_enabled", "")),
			"cluster.labels.audit_log_max_age", "has no effect without audit_log_enabled=true"},
		{"audit max age not a number", mutateFeature("apiserver", withLabels("audit_log_max_age", "-1")),
			"cluster.labels.audit_log_max_age", "want an integer from 1 to 3650"},
		{"unknown mirror set", mutateFeature("registries", withLabels("registry_mirror_set", "nope")),
			"cluster.labels.registry_mirror_set", "no mirror set named \"nope\" (registries.mirror_sets has: dmz, internal)"},
		{"registry credentials under Argo CD", mutateFeature("registries", argo(nil)),
			"registries.auth", "Argo CD Applications cannot take values from a Secret"},
		{"registry password with a quote", mutateFeature("registries", func(_ *v1alpha1.ClusterEvent, cfg *generator.Config) {
			a := cfg.Registries.Auth["registry.example.org"]
			a.Password = `pa"ss` + registryPassword
			cfg.Registries.Auth["registry.example.org"] = a
		}), "registries.auth.registry.example.org.password_file", "without quotes"},
		{"trusted CA that is no certificate", mutateFeature("registries", func(_ *v1alpha1.ClusterEvent, cfg *generator.Config) {
			cfg.Registries.TrustedCAs["example-org-ca"] = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"
		}), "registries.trusted_ca_files.example-org-ca", "want [CERTIFICATE]"},
		{"site default for an unknown label", mutateFeature("oidc", func(_ *v1alpha1.ClusterEvent, cfg *generator.Config) {
			cfg.Features.LabelDefaults = map[string]string{"oidc_issuer": "https://x"}
		}), "features.label_defaults.oidc_issuer", "not a feature label"},
		{"node group pinned ahead of the control plane", mutateFeature("oidc", func(_ *v1alpha1.ClusterEvent, cfg *generator.Config) {
			cfg.ValuesOverlay = map[string]any{"nodeGroupDefaults": map[string]any{"kubernetesVersion": "1.34.1"}}
		}), "values.nodeGroups[0].kubernetesVersion", "newer than the control plane's 1.33.7"},
		{"node group lagging four minors", mutateFeature("oidc", func(_ *v1alpha1.ClusterEvent, cfg *generator.Config) {
			cfg.ValuesOverlay = map[string]any{"nodeGroupDefaults": map[string]any{"kubernetesVersion": "1.29.4"}}
		}), "values.nodeGroups[0].kubernetesVersion", "4 minor versions behind the control plane's 1.33.7: Kubernetes allows 3"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, err := tc.render(t)
			if err == nil {
				t.Fatalf("rendered %v, want a refusal of %s", res, tc.field)
			}
			if !errors.Is(err, v1alpha1.ErrInvalidInput) {
				t.Errorf("%v does not wrap ErrInvalidInput", err)
			}
			var fe v1alpha1.InputErrors
			if !errors.As(err, &fe) {
				t.Fatalf("%T is not InputErrors", err)
			}
			found := false
			for _, e := range fe {
				found = found || (e.Field == tc.field && strings.Contains(e.Message, tc.rule))
			}
			if !found {
				t.Errorf("got %v, want %s: …%s…", err, tc.field, tc.rule)
			}
			if strings.Contains(err.Error(), registryPassword) {
				t.Error("the error holds the registry password")
			}
		})
	}
}

// TestFeatureLabelsPrecedence: a node group's label beats the cluster's, which beats the
// template's, which beats the site default, as for the driver's labels.
func TestFeatureLabelsPrecedence(t *testing.T) {
	t.Parallel()
	res, err := mutateFeature("placement", func(ev *v1alpha1.ClusterEvent, cfg *generator.Config) {
		ev.ClusterTemplate.Labels["availability_zone"] = "az-template"
		cfg.Features.LabelDefaults = map[string]string{"availability_zone": "az-site", "oidc_issuer_url": "https://sso.example.org", "oidc_client_id": "k8s"}
	})(t)
	if err != nil {
		t.Fatal(err)
	}
	v := jsonData(t, res.Values)
	ngs := v["nodeGroups"].([]any)
	if got := ngs[0].(map[string]any)["failureDomain"]; got != "az-1" {
		t.Errorf("default-worker failureDomain = %v, want the cluster label az-1", got)
	}
	if got := ngs[1].(map[string]any)["failureDomain"]; got != "az-2" {
		t.Errorf("workers-az2 failureDomain = %v, want its own label az-2", got)
	}
	if got := at(v, "oidc.issuerUrl"); got != "https://sso.example.org" {
		t.Errorf("oidc.issuerUrl = %v, want the site default", got)
	}
	ev := featureEvent(t, "placement")
	delete(ev.Cluster.Labels, "availability_zone")
	ev.ClusterTemplate.Labels["availability_zone"] = "az-template"
	res, err = render(ev, defaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if got := at(jsonData(t, res.Values), "nodeGroups"); got.([]any)[0].(map[string]any)["failureDomain"] != "az-template" {
		t.Errorf("template label not used: %v", got)
	}
	// An empty label is absent: never an empty failure domain (CAPI ≥ 1.10 rejects it).
	ev.ClusterTemplate.Labels["availability_zone"] = " "
	res, err = render(ev, defaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := res.Values["nodeGroups"].([]any)[0].(map[string]any)["failureDomain"]; ok {
		t.Error("an empty availability_zone rendered a failureDomain")
	}
}

// TestCheckUpgrade: Kubernetes moves one minor forward at most, never backwards, compared
// with the values deployed; the messages name both versions.
func TestCheckUpgrade(t *testing.T) {
	t.Parallel()
	res := fixtureResult(t, "06-prod-a-upgrade.yaml") // renders 1.34.x
	now := res.Values["kubernetesVersion"].(string)
	deployed := func(v string) *generator.Deployed {
		return &generator.Deployed{ChartVersion: "0.27.0", Values: map[string]any{"kubernetesVersion": v}}
	}
	ev := fixtureEvent(t, "06-prod-a-upgrade.yaml")
	for _, tc := range []struct {
		from, want string
	}{
		{now, ""},
		{"1.33.7", ""},
		{"1.33.0", ""},
		{"1.32.9", "skips a minor version from the 1.32.9 the cluster runs: upgrade one minor version at a time (first to 1.33)"},
		{"1.35.0", "older than the 1.35.0 the cluster runs: Kubernetes is never downgraded"},
		{now[:strings.LastIndex(now, ".")] + ".99", "is never downgraded"},
		{"v2.0.0", "is never downgraded"},
	} {
		err := generator.CheckUpgrade(ev, res, deployed(tc.from))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s → %s: %v", tc.from, now, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), "resolved.image.kube_version: Kubernetes "+now) ||
			!strings.Contains(err.Error(), tc.want) || !errors.Is(err, v1alpha1.ErrInvalidInput)):
			t.Errorf("%s → %s: %v, want …%s", tc.from, now, err, tc.want)
		}
	}
	if err := generator.CheckUpgrade(ev, res, nil); err != nil {
		t.Errorf("nothing deployed: %v", err)
	}
	del := *ev
	del.Operation = v1alpha1.DeleteCluster
	if err := generator.CheckUpgrade(&del, res, deployed("1.20.0")); err != nil {
		t.Errorf("delete: %v", err)
	}
}

// TestRegistryCredentialsOnlyInTheSecret: the registry password appears in the registry
// Secret and nowhere else: not in the values, the HelmRelease, or any other file.
func TestRegistryCredentialsOnlyInTheSecret(t *testing.T) {
	t.Parallel()
	cfg := testenv.RegistriesConfig(t)
	res, err := render(featureEvent(t, "registries"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := res.Files(cfg, generator.FileOptions{Secrets: generator.PlaintextSecrets})
	if err != nil {
		t.Fatal(err)
	}
	holders := 0
	for p, b := range fs.Files {
		if strings.Contains(string(b), registryPassword) {
			if !strings.HasSuffix(p, "/secret-registry-auth.yaml") {
				t.Errorf("%s holds the registry password", p)
			}
			holders++
		}
	}
	if holders != 1 {
		t.Errorf("%d files hold the registry password, want the registry Secret only", holders)
	}
	if strings.Contains(string(mustJSON(t, res.Values)), registryPassword) {
		t.Error("the values hold the registry password")
	}
	vf := res.Objects.HelmRelease.Spec.ValuesFrom
	if len(vf) != 1 || vf[0].Kind != "Secret" || vf[0].Name != res.ReleaseName+"-registry-auth" || vf[0].ValuesKey != generator.RegistryValuesKey {
		t.Errorf("valuesFrom = %+v", vf)
	}
	for _, s := range res.Objects.Secrets {
		if s.Name == res.ReleaseName+"-registry-auth" && s.Annotations[generator.PruneAnnotation] != "" {
			t.Error("the registry Secret must be pruned with the cluster: nothing needs it once the HelmRelease is gone")
		}
	}
}

// TestCertificateRotationByChartVersion: the chart value where the chart has it, the
// post-renderer patch where it does not, both for the newest (unpinned) chart, and under
// Argo CD only the value.
func TestCertificateRotationByChartVersion(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		chart       string
		argo        bool
		value, path bool
	}{
		{"0.10.1", false, false, true},
		{"0.27.0", false, false, true},
		{"0.28.0", false, true, false},
		{"0.28.0", true, true, false},
		{"", false, true, true},
		{"", true, true, false},
	} {
		res, err := mutateFeature("certificate-rotation", func(ev *v1alpha1.ClusterEvent, cfg *generator.Config) {
			ev.ClusterTemplate.Labels["capi_helm_chart_version"] = tc.chart
			if tc.argo {
				cfg.Format = generator.FormatArgo
			}
		})(t)
		if err != nil {
			t.Fatalf("chart %q argo %v: %v", tc.chart, tc.argo, err)
		}
		_, hasValue := res.Values["controlPlane"].(map[string]any)["certificatesExpiryDays"]
		hasPatch := res.Objects.HelmRelease != nil && len(res.Objects.HelmRelease.Spec.PostRenderers) == 1
		if hasValue != tc.value || hasPatch != tc.path {
			t.Errorf("chart %q argo %v: value %v patch %v, want %v %v", tc.chart, tc.argo, hasValue, hasPatch, tc.value, tc.path)
		}
	}
}

// TestScaleFromZeroDiskFromFlavor: a group that boots from the flavor's disk (no root
// volume) announces that disk to the autoscaler; a root volume, when set, wins.
func TestScaleFromZeroDiskFromFlavor(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		bootVolume bool
		want       string
	}{
		{"flavor disk", false, `capacity.cluster-autoscaler.kubernetes.io/ephemeral-disk: 40Gi`},
		{"root volume", true, `capacity.cluster-autoscaler.kubernetes.io/ephemeral-disk: 50Gi`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, err := mutateFeature("scale-from-zero", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) {
				if !tc.bootVolume {
					delete(ev.Cluster.Labels, "boot_volume_size")
					delete(ev.ClusterTemplate.Labels, "boot_volume_size")
				}
				for id, f := range ev.Resolved.Flavors {
					f.DiskGB = 40
					ev.Resolved.Flavors[id] = f
				}
			})(t)
			if err != nil {
				t.Fatal(err)
			}
			hr, err := generator.MarshalObject(res.Objects.HelmRelease)
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(string(hr), tc.want); n == 0 {
				t.Errorf("no %q in the post-renderer patches:\n%s", tc.want, hr)
			}
			if strings.Count(string(hr), "ephemeral-disk") != strings.Count(string(hr), tc.want) {
				t.Errorf("another ephemeral-disk size than %q:\n%s", tc.want, hr)
			}
		})
	}
}
