package generator

import (
	"fmt"
	"strings"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/magnum"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Result is a rendered event.
type Result struct {
	Operation v1alpha1.Operation `json:"operation"`
	EventID   string             `json:"event_id,omitempty"`
	// EventDigest identifies the event as its sender sent it, before resolvers completed
	// it; the caller that resolves sets it (reconciler.Pipeline.Render), so that a commit
	// names the request a retry repeats.
	EventDigest string `json:"-"`
	// ClusterUUID and ClusterName identify the Magnum cluster.
	ClusterUUID string `json:"cluster_uuid"`
	ClusterName string `json:"cluster_name"`
	ProjectID   string `json:"project_id"`
	// ReleaseName is R, the Helm release name, which Magnum stores as stack_id.
	ReleaseName string `json:"stack_id"`
	// ReleaseNameGenerated is true when the cluster had no stack_id: the caller must store
	// ReleaseName back into Magnum.
	ReleaseNameGenerated bool   `json:"stack_id_generated"`
	Namespace            string `json:"namespace"`
	// ManagementCluster names the management cluster the cluster goes to (empty without
	// management_clusters); Root is its path in the repository, or flux.path.
	ManagementCluster string `json:"management_cluster,omitempty"`
	Root              string `json:"-"`
	Chart             Chart  `json:"chart"`
	// Values are the chart values; nil for delete_cluster.
	Values map[string]any `json:"values,omitempty"`
	// Deviations lists where the values differ on purpose from magnum-capi-helm 1.4.0.
	Deviations []Deviation `json:"deviations,omitempty"`
	// Warnings are what may fail later although the input is valid, e.g. a chart whose CAPO
	// API version the management cluster may not serve.
	Warnings []string `json:"warnings,omitempty"`
	Objects  Objects  `json:"-"`
}

// Objects are the Kubernetes objects of a rendered cluster.
type Objects struct {
	Namespace *corev1.Namespace
	// Source is the shared HelmRepository (or OCIRepository) of the chart.
	Source      Object
	HelmRelease *helmv2.HelmRelease
	// Application replaces Source and HelmRelease in the argo format.
	Application *unstructured.Unstructured
	// Secrets are plaintext: how they reach Git (SOPS, or not at all) is the caller's choice.
	Secrets []*corev1.Secret
	// Layout are the namespace's GitRepository and Kustomization in the per-namespace
	// layout; empty in the single layout.
	Layout []Object
}

// Render renders one event with a site's validated configuration. It checks the whole
// event first and returns every problem found as InputErrors (which wrap
// ErrInvalidInput); a Result is returned only when there is none.
func Render(ev *v1alpha1.ClusterEvent, site *Site) (*Result, error) {
	cfg := &site.Config
	r := &render{ev: ev, cfg: cfg, lc: &cfg.Magnum.CapiHelmClusterLabels,
		labels: newLabelSet(ev.ClusterTemplate.Labels, ev.Cluster.Labels)}
	res := &Result{Operation: ev.Operation, EventID: ev.ID, ClusterUUID: ev.Cluster.UUID,
		ClusterName: ev.Cluster.Name, ProjectID: ev.Cluster.ProjectID}

	r.identity(res)
	r.route(res)
	r.readAdoption()
	chart, devs := chartFor(ev, cfg, &r.p)
	r.chart, r.devs = chart, append(r.devs, devs...)
	res.Chart = r.chart
	if len(cfg.ManagementCluster.CAPOAPIVersions) == 0 && r.chart.CAPOAPIVersion() != "v1beta1" {
		res.Warnings = append(res.Warnings, fmt.Sprintf("chart %s writes infrastructure.cluster.x-k8s.io/%s objects: CAPO 0.12 and newer serve only v1beta1, so helm-controller will fail to install it there (set management_cluster.capo_api_versions to refuse such charts)",
			r.chart.Version, r.chart.CAPOAPIVersion()))
	}
	if ev.Operation != v1alpha1.DeleteCluster {
		all := r.nodeGroupList()
		r.checkTarget(all)
		groups := r.rendered(all)
		res.Values = r.values(groups)
		r.checkUpgradeImages()
		r.checkFlavors(groups)
	}
	res.Objects.Namespace = &corev1.Namespace{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: res.Namespace},
	}
	if ev.Operation != v1alpha1.DeleteCluster {
		if cfg.Format == FormatArgo {
			res.Objects.Application = r.application(res.Namespace, res.Values)
		} else {
			res.Objects.Source = r.source()
			res.Objects.HelmRelease = r.helmRelease(res.Namespace, res.Values, res.Objects.Source)
		}
		res.Objects.Layout = layoutObjects(cfg, res.Root, res.Namespace)
		res.Objects.Secrets = append(r.secrets(res.Namespace), r.registrySecret(res.Namespace)...)
	}
	if err := r.p.err(); err != nil {
		return nil, err
	}
	res.Deviations = r.devs
	res.Warnings = append(res.Warnings, r.warnings...)
	return res, nil
}

// identity checks what names the cluster and derives R and the namespace.
func (r *render) identity(res *Result) {
	c := r.ev.Cluster
	if c.UUID == "" {
		r.p.add("cluster.uuid", "required")
	} else if !magnum.IsUUIDLike(c.UUID) {
		r.p.add("cluster.uuid", "%q is not a UUID", c.UUID)
	}
	switch {
	case c.ProjectID == "":
		r.p.add("cluster.project_id", "required")
	case !isProjectID(c.ProjectID):
		r.p.add("cluster.project_id", "%q has characters a Keystone project id cannot have (want letters, digits, '-', '_')", c.ProjectID)
	default:
		res.Namespace = magnum.Namespace(r.cfg.Magnum.CapiHelm.NamespacePrefix, c.ProjectID)
		if msgs := validation.IsDNS1123Label(res.Namespace); len(msgs) > 0 {
			r.p.add("cluster.project_id", "namespace %q is not valid: %s", res.Namespace, strings.Join(msgs, "; "))
		}
	}
	// The ids become label values, cut as objectLabels cuts them. They are checked in a
	// fixed order (the fields' order here), so that several refusals always read the same.
	for _, id := range [...]struct{ field, v string }{
		{"cluster.user_id", c.UserID}, {"cluster.uuid", c.UUID}, {"cluster.project_id", c.ProjectID},
	} {
		if !isProjectID(id.v) {
			continue // reported above or below, or optional
		}
		cut := id.v
		if len(cut) > magnum.MaxNameLen {
			cut = cut[:magnum.MaxNameLen]
		}
		if msgs := validation.IsValidLabelValue(cut); len(msgs) > 0 {
			r.p.add(id.field, "cannot be a label value: %s", strings.Join(msgs, "; "))
		}
	}
	if c.UserID != "" && !isProjectID(c.UserID) {
		r.p.add("cluster.user_id", "%q has characters a Keystone user id cannot have", c.UserID)
	}
	if c.StackID != "" {
		res.ReleaseName = c.StackID
	} else {
		res.ReleaseName = magnum.GenerateReleaseName(c.Name, c.UUID)
		res.ReleaseNameGenerated = true
		r.deviate("stack_id", "generated as %q, its suffix from the cluster UUID; the driver draws the suffix at random, so a lost stack_id could never be found again", res.ReleaseName)
	}
	r.release = res.ReleaseName
	field := "cluster.stack_id"
	if res.ReleaseNameGenerated {
		field = "cluster.name"
	}
	switch {
	case len(res.ReleaseName) > magnum.MaxReleaseNameLen:
		r.p.add(field, "release name %q is %d characters; Helm allows %d", res.ReleaseName, len(res.ReleaseName), magnum.MaxReleaseNameLen)
	case !isDNSLabelForm(res.ReleaseName):
		r.p.add(field, "release name %q must be a DNS label (lower-case letters, digits, '-')", res.ReleaseName)
	}
}

// String summarises a result in one line, for logs.
func (res *Result) String() string {
	return fmt.Sprintf("%s %s/%s (cluster %s)", res.Operation, res.Namespace, res.ReleaseName, res.ClusterUUID)
}
