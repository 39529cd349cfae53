package generator

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/magnum-gitops/magnum-gitops/magnum"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// helmChartLayerMediaType selects the chart layer of an OCI Helm artifact.
const helmChartLayerMediaType = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"

// sourceName names the shared source object of a chart repository: the URL's host and path
// as a DNS label, shortened with a digest when too long, so every HelmRelease that uses the
// same repository points at one object.
func sourceName(url string) string {
	s := url
	if i := strings.Index(s, "://"); i >= 0 {
		s = s[i+3:]
	}
	name := magnum.SanitizedName(s)
	if len(name) > magnum.MaxNameLen {
		sum := sha256.Sum256([]byte(url))
		name = strings.TrimRight(name[:magnum.MaxNameLen-9], "-") + "-" + hex.EncodeToString(sum[:4])
	}
	return name
}

// source returns the chart's source object: one HelmRepository per repository URL, or, for
// an oci:// chart, one OCIRepository per chart version (HelmRepository type oci is in
// maintenance mode in Flux).
func (r *render) source() Object {
	f := r.cfg.Flux
	if r.chart.IsOCI() {
		if r.chart.Version == "" {
			r.p.add("magnum.capi_helm.default_helm_chart_version", "an oci:// chart needs an exact version")
		}
		repo := &sourcev1.OCIRepository{
			TypeMeta: metav1.TypeMeta{APIVersion: sourcev1.GroupVersion.String(), Kind: sourcev1.OCIRepositoryKind},
			ObjectMeta: metav1.ObjectMeta{
				Name:      ociSourceName(r.chart),
				Namespace: f.SourceNamespace,
				Labels:    map[string]string{magnum.LabelManagedBy: magnum.ManagedBy},
			},
			Spec: sourcev1.OCIRepositorySpec{
				URL:           r.chart.Name,
				Reference:     &sourcev1.OCIRepositoryRef{Tag: r.chart.Version},
				LayerSelector: &sourcev1.OCILayerSelector{MediaType: helmChartLayerMediaType, Operation: sourcev1.OCILayerCopy},
				Interval:      metav1.Duration{Duration: f.Interval.Duration},
			},
		}
		return repo
	}
	return &sourcev1.HelmRepository{
		TypeMeta: metav1.TypeMeta{APIVersion: sourcev1.GroupVersion.String(), Kind: sourcev1.HelmRepositoryKind},
		ObjectMeta: metav1.ObjectMeta{
			Name:      sourceName(r.chart.Repository),
			Namespace: f.SourceNamespace,
			Labels:    map[string]string{magnum.LabelManagedBy: magnum.ManagedBy},
		},
		Spec: sourcev1.HelmRepositorySpec{
			URL:      r.chart.Repository,
			Interval: metav1.Duration{Duration: f.Interval.Duration},
		},
	}
}

func ociSourceName(c Chart) string {
	base := c.Name[strings.LastIndex(c.Name, "/")+1:]
	return sourceName(base + "-" + c.Version)
}

// helmRelease is the Flux equivalent of the driver's
// "helm upgrade R openstack-cluster --install --history-max 10 --timeout 5m": same release
// name and storage namespace (so Flux adopts the driver's release), no waiting (readiness is
// read from CAPI), and retries instead of remediation: an uninstall or rollback of a
// cluster release deletes or rolls back real infrastructure.
func (r *render) helmRelease(ns string, values map[string]any, src Object) *helmv2.HelmRelease {
	f := r.cfg.Flux
	raw, err := json.Marshal(values)
	if err != nil {
		// values hold only JSON-shaped data built here; failing to marshal is a bug.
		panic("generator: values are not JSON: " + err.Error())
	}
	dur := func(d Duration) *metav1.Duration { return &metav1.Duration{Duration: d.Duration} }
	hr := &helmv2.HelmRelease{
		TypeMeta: metav1.TypeMeta{APIVersion: helmv2.GroupVersion.String(), Kind: helmv2.HelmReleaseKind},
		ObjectMeta: metav1.ObjectMeta{
			Name:        r.release,
			Namespace:   ns,
			Labels:      r.objectLabels(true),
			Annotations: map[string]string{magnum.AnnotationClusterName: r.ev.Cluster.Name},
		},
		Spec: helmv2.HelmReleaseSpec{
			Interval:         metav1.Duration{Duration: f.Interval.Duration},
			ReleaseName:      r.release,
			TargetNamespace:  ns,
			StorageNamespace: ns,
			Timeout:          dur(f.Timeout),
			MaxHistory:       ptr(f.MaxHistory),
			Install: &helmv2.Install{
				Strategy: &helmv2.InstallStrategy{Name: string(helmv2.ActionStrategyRetryOnFailure),
					RetryInterval: dur(f.RetryInterval)},
				DisableWait:        true,
				DisableWaitForJobs: true,
			},
			Upgrade: &helmv2.Upgrade{
				Strategy: &helmv2.UpgradeStrategy{Name: string(helmv2.ActionStrategyRetryOnFailure),
					RetryInterval: dur(f.RetryInterval)},
				DisableWait:        true,
				DisableWaitForJobs: true,
			},
			Uninstall:      &helmv2.Uninstall{Timeout: dur(f.UninstallTimeout)},
			DriftDetection: &helmv2.DriftDetection{Mode: helmv2.DriftDetectionMode(f.DriftDetection)},
			Values:         &apiextensionsv1.JSON{Raw: raw},
			ValuesFrom:     r.valuesFrom(ns),
			PostRenderers:  r.postRenderers(),
		},
	}
	ref := helmv2.CrossNamespaceObjectReference{
		Kind: src.GetObjectKind().GroupVersionKind().Kind, Name: src.GetName(), Namespace: src.GetNamespace()}
	if r.chart.IsOCI() {
		hr.Spec.ChartRef = &helmv2.CrossNamespaceSourceReference{Kind: ref.Kind, Name: ref.Name, Namespace: ref.Namespace}
	} else {
		hr.Spec.Chart = &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{
			Chart:     r.chart.Name,
			Version:   r.chart.Version,
			SourceRef: ref,
		}}
	}
	return hr
}
