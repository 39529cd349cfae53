package generator

import (
	"bytes"
	"cmp"
	"encoding/json"
	"strings"

	"github.com/magnum-gitops/magnum-gitops/magnum"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Output formats.
const (
	FormatFlux = "flux"
	FormatArgo = "argo"
)

// Argo CD names.
const (
	ApplicationFile = "application.yaml"
	// argoFinalizer makes deleting the Application delete what it deployed (the CAPI
	// Cluster, which CAPI then tears down); without it the cluster would be orphaned.
	argoFinalizer        = "resources-finalizer.argocd.argoproj.io"
	argoSyncWave         = "argocd.argoproj.io/sync-wave"
	argoSyncOptions      = "argocd.argoproj.io/sync-options"
	argoApplicationGroup = "argoproj.io/v1alpha1"
)

// ArgoConfig shapes the Argo CD Application written instead of a HelmRelease.
type ArgoConfig struct {
	// Namespace is where Argo CD watches Applications.
	Namespace string `json:"namespace"`
	// Project is the AppProject of every Application.
	Project string `json:"project"`
	// DestinationServer is the management cluster's API as Argo CD knows it.
	DestinationServer string `json:"destination_server"`
	// CascadeDelete adds Argo CD's resources finalizer: deleting the Application deletes
	// the CAPI Cluster. Without it, removing a cluster from Git orphans it.
	CascadeDelete bool `json:"cascade_delete"`
}

// application is the Argo CD equivalent of the HelmRelease: the same chart, version,
// release name and values, deployed into the cluster namespace. The parent application
// that syncs this directory applies the Secrets in wave -1 and this Application in wave 0,
// so the CA and credential Secrets exist before CAPI reconciles the Cluster.
func (r *render) application(ns string, values map[string]any) *unstructured.Unstructured {
	a := r.cfg.Argo
	repoURL, chart := r.chart.Repository, r.chart.Name
	if r.chart.IsOCI() {
		ref := strings.TrimPrefix(r.chart.Name, "oci://")
		i := strings.LastIndex(ref, "/")
		repoURL, chart = ref[:i], ref[i+1:]
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": argoApplicationGroup,
		"kind":       "Application",
		"metadata": map[string]any{
			"name":        r.release,
			"namespace":   a.Namespace,
			"labels":      stringMap(r.objectLabels(true)),
			"annotations": map[string]any{magnum.AnnotationClusterName: r.ev.Cluster.Name, argoSyncWave: "0"},
		},
		"spec": map[string]any{
			"project": a.Project,
			"source": map[string]any{
				"repoURL":        repoURL,
				"chart":          chart,
				"targetRevision": cmp.Or(r.chart.Version, "*"),
				"helm": map[string]any{
					"releaseName":  r.release,
					"valuesObject": jsonValue(values),
				},
			},
			"destination": map[string]any{"server": a.DestinationServer, "namespace": ns},
			"syncPolicy": map[string]any{
				"automated":   argoAutomated(),
				"syncOptions": []any{"ServerSideApply=true"},
			},
		},
	}}
	if a.CascadeDelete {
		u.SetFinalizers([]string{argoFinalizer})
	}
	return u
}

// jsonValue converts values to the types unstructured objects hold (int64, float64), as if
// they had been read from JSON.
func jsonValue(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		panic("generator: values are not JSON: " + err.Error())
	}
	var out any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&out); err != nil {
		panic("generator: values are not JSON: " + err.Error())
	}
	return numbers(out)
}

func numbers(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = numbers(e)
		}
	case []any:
		for i, e := range t {
			t[i] = numbers(e)
		}
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return i
		}
		f, _ := t.Float64()
		return f
	}
	return v
}

func stringMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
