package apivalidation

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"

	"github.com/magnum-gitops/magnum-gitops/internal/chartrender"
	"github.com/magnum-gitops/magnum-gitops/internal/servicechart"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
)

// The operators whose CRDs the chart's opt-in objects are written for, read from their Go
// modules (a download through the module proxy, not a build): testenv installs neither.
var serviceChartCRDSources = []struct{ module, version, file string }{
	{"github.com/prometheus-operator/prometheus-operator", "v0.85.0", "example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml"},
	{"github.com/prometheus-operator/prometheus-operator", "v0.85.0", "example/prometheus-operator-crd/monitoring.coreos.com_prometheusrules.yaml"},
	// cert-manager keeps its CRDs as chart templates: their schemas are plain, only the
	// labels are templated, and are dropped.
	{"github.com/cert-manager/cert-manager", "v1.18.2", "deploy/crds/crd-certificates.yaml"},
}

// installServiceChartCRDs installs the ServiceMonitor, PrometheusRule and Certificate CRDs
// and waits until the API server serves them.
func installServiceChartCRDs(ctx context.Context, t *testing.T) {
	t.Helper()
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, s := range serviceChartCRDSources {
		dir, err := moduleDir(s.module, s.version)
		if err != nil {
			t.Fatal(err)
		}
		crd, err := readPlainCRD(filepath.Join(dir, s.file))
		if err != nil {
			t.Fatalf("%s@%s %s: %v", s.module, s.version, s.file, err)
		}
		if err := env.Client.Create(ctx, crd); client.IgnoreAlreadyExists(err) != nil {
			t.Fatalf("installing %s: %v", crd.Name, err)
		}
		crds = append(crds, crd)
	}
	if err := envtest.WaitForCRDs(env.Config, crds, envtest.CRDInstallOptions{MaxTime: time.Minute, PollInterval: 200 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
}

// readPlainCRD reads the one CRD of a file, without its metadata's labels and annotations
// (cert-manager's are Helm templates).
func readPlainCRD(path string) (*apiextensionsv1.CustomResourceDefinition, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var raw map[string]any
	if err := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096).Decode(&raw); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	meta, _ := raw["metadata"].(map[string]any)
	delete(meta, "labels")
	delete(meta, "annotations")
	j, err := json.Marshal(raw)
	if err != nil {
		return nil, err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(j, crd); err != nil {
		return nil, err
	}
	if crd.Kind != "CustomResourceDefinition" || crd.Name == "" {
		return nil, fmt.Errorf("no CustomResourceDefinition in %s", filepath.Base(path))
	}
	return crd, nil
}

// moduleDir is a module's directory in the module cache, downloaded if need be.
func moduleDir(path, version string) (string, error) {
	out, err := exec.Command("go", "mod", "download", "-json", path+"@"+version).Output()
	var m struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &m); jerr != nil || m.Dir == "" {
		return "", fmt.Errorf("go mod download %s@%s: %v %s", path, version, err, m.Error)
	}
	return m.Dir, nil
}

// serviceChartValues reads a values file of the service's chart (its ci/ directory).
func serviceChartValues(t *testing.T, name string) map[string]any {
	t.Helper()
	v, err := chartutil.ReadValuesFile(filepath.Join(testenv.RepoRoot(), servicechart.Dir, "ci", name))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// renderServiceChart renders the service's chart with values, as its objects.
func renderServiceChart(t *testing.T, ch *chart.Chart, release, namespace string, values map[string]any) []*unstructured.Unstructured {
	t.Helper()
	m, err := servicechart.Render(ch, release, namespace, values)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := chartrender.Parse(strings.NewReader(m))
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// TestServiceChartAccepted renders the service's chart with the values deploy/service is
// rendered with and with every option on, and sends each object to the real API server
// (server-side apply, dry run) with the real schemas of its CRDs: every one is accepted.
func TestServiceChartAccepted(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	installServiceChartCRDs(ctx, t)
	ch, err := servicechart.Load(testenv.RepoRoot())
	if err != nil {
		t.Fatal(err)
	}
	if err := env.EnsureNamespace(ctx, "flux-system"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, release, namespace, values string
		kinds                            []string // the kinds this rendering must hold
	}{
		{"deploy/service", servicechart.DeployRelease, servicechart.DeployNamespace, "deploy-service-values.yaml",
			[]string{"Namespace", "ConfigMap", "Deployment", "Service", "PodDisruptionBudget", "NetworkPolicy", "ServiceAccount",
				"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}},
		{"every option", "mg", "magnum-gitops-all-options", "all-options-values.yaml",
			[]string{"Namespace", "Deployment", "Service", "Ingress", "Certificate", "ServiceMonitor", "PrometheusRule"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := renderServiceChart(t, ch, tc.release, tc.namespace, serviceChartValues(t, tc.values))
			kinds := map[string]int{}
			for _, o := range objs {
				kinds[o.GetKind()]++
				if o.GetKind() == "Namespace" {
					// Created for real: the dry runs of the objects in it need it.
					if err := env.EnsureNamespace(ctx, o.GetName()); err != nil {
						t.Fatal(err)
					}
					continue
				}
				if err := apply(ctx, o, client.DryRunAll); err != nil {
					t.Errorf("%s %s/%s rejected: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
				}
			}
			for _, k := range tc.kinds {
				if kinds[k] == 0 {
					t.Errorf("no %s rendered (%v)", k, kinds)
				}
			}
		})
	}
}

// TestServiceChartRefusedByAPIServer: a value the schema cannot judge (a CIDR, a label)
// but the API server refuses fails the install, the message naming the object's field the
// value became (the API server capitalises some: spec.LoadBalancerSourceRanges).
func TestServiceChartRefusedByAPIServer(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	ch, err := servicechart.Load(testenv.RepoRoot())
	if err != nil {
		t.Fatal(err)
	}
	if err := env.EnsureNamespace(ctx, servicechart.DeployNamespace); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, kind, field string
		set               func(v map[string]any)
	}{
		{"a source range that is no CIDR", "Service", "spec.loadBalancerSourceRanges", func(v map[string]any) {
			v["service"] = map[string]any{"type": "LoadBalancer", "loadBalancerSourceRanges": []any{"magnum-controllers"}}
		}},
		{"a pod label that is no label", "Deployment", "spec.template.labels", func(v map[string]any) {
			v["podLabels"] = map[string]any{"team": "cloud ops"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vals := serviceChartValues(t, "deploy-service-values.yaml")
			tc.set(vals)
			objs := renderServiceChart(t, ch, servicechart.DeployRelease, servicechart.DeployNamespace, vals)
			for _, o := range objs {
				if o.GetKind() != tc.kind {
					continue
				}
				err := apply(ctx, o, client.DryRunAll)
				if err == nil || !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(tc.field)) {
					t.Fatalf("%s: %v, want refused naming %s", tc.kind, err, tc.field)
				}
				t.Log(err)
				return
			}
			t.Fatalf("no %s rendered", tc.kind)
		})
	}
}
