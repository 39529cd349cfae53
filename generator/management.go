package generator

import (
	"cmp"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/magnum"
)

// ManagementCluster is one of several CAPI management clusters that one repository
// feeds, each through its own Flux path, as one per region. The generator reads its name,
// path and selectors; serve reads how to reach it.
type ManagementCluster struct {
	// Name names it in the render's output, the answer to an event, logs and errors.
	Name string `json:"name"`
	// Path is the directory of the repository its Flux Kustomization applies: it takes
	// flux.path's place for the clusters that go there.
	Path string `json:"path"`
	// Regions and TemplateLabels select the Magnum clusters that go there: the event's
	// region (resolved.region_name, else magnum.cinder_client.region_name) is one of
	// Regions, and its cluster template carries every one of TemplateLabels. Either may be
	// left empty; an entry with neither selects nothing, and takes clusters only as the
	// Default.
	Regions        []string          `json:"regions,omitempty"`
	TemplateLabels map[string]string `json:"template_labels,omitempty"`
	// Default takes the clusters no other management cluster selects.
	Default bool `json:"default,omitempty"`

	// KubeconfigFile is how serve reaches it (empty: serve's --kubeconfig, $KUBECONFIG or
	// in-cluster); Kustomization and ReconcileRequest are serve.kustomization and
	// serve.reconcile_request for it.
	KubeconfigFile   string           `json:"kubeconfig_file,omitempty"`
	Kustomization    string           `json:"kustomization,omitempty"`
	ReconcileRequest ReconcileRequest `json:"reconcile_request,omitempty"`
}

// ReconcileRequest names a Flux GitRepository that serve annotates after each push.
type ReconcileRequest struct {
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
}

// Roots are the repository directories rendered clusters live in: each management
// cluster's path, or flux.path when none is configured.
func (c *Config) Roots() []string {
	if len(c.ManagementClusters) == 0 {
		return []string{c.Flux.Path}
	}
	roots := make([]string, len(c.ManagementClusters))
	for i, m := range c.ManagementClusters {
		roots[i] = m.Path
	}
	return roots
}

// ManagementClusterAt is the management cluster whose path is root; nil when none is
// configured (flux.path).
func (c *Config) ManagementClusterAt(root string) *ManagementCluster {
	for i := range c.ManagementClusters {
		if c.ManagementClusters[i].Path == root {
			return &c.ManagementClusters[i]
		}
	}
	return nil
}

// route is the management cluster an event's cluster goes to: the first that selects it,
// else the default. Without management clusters it is flux.path, unnamed. Routing looks
// at the event alone: an event routed away from the path that holds its cluster is
// refused by the reconciler (Pipeline.checkMove), since moving a cluster between
// management clusters is clusterctl move, not a render.
func (r *render) route(res *Result) {
	cfg := r.cfg
	if len(cfg.ManagementClusters) == 0 {
		res.Root = cfg.Flux.Path
		return
	}
	region := cmp.Or(r.ev.Resolved.RegionName, cfg.Magnum.CinderClient.RegionName)
	var def *ManagementCluster
	for i := range cfg.ManagementClusters {
		m := &cfg.ManagementClusters[i]
		if m.selects(region, r.ev.ClusterTemplate.Labels) {
			res.ManagementCluster, res.Root = m.Name, m.Path
			return
		}
		if m.Default {
			def = m
		}
	}
	if def != nil {
		res.ManagementCluster, res.Root = def.Name, def.Path
		return
	}
	r.p.add("resolved.region_name", "no management cluster takes the cluster (region %q, template labels %s): give one of management_clusters default: true", region, labelList(r.ev.ClusterTemplate.Labels))
}

// selects reports whether a cluster of region, whose template carries labels, goes to m.
// The default alone selects nothing by itself: it takes what the others leave.
func (m *ManagementCluster) selects(region string, labels v1alpha1.Labels) bool {
	if len(m.Regions) == 0 && len(m.TemplateLabels) == 0 {
		return false
	}
	if len(m.Regions) > 0 && !slices.Contains(m.Regions, region) {
		return false
	}
	for k, v := range m.TemplateLabels {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// labelList prints labels in key order, for an error.
func labelList(l v1alpha1.Labels) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(l)) {
		parts = append(parts, k+"="+l[k])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// validateManagementClusters checks the management_clusters section: names are DNS labels
// and unique, paths are distinct and none inside another (each Kustomization must apply
// only its own clusters), at most one is the default, and each other one selects.
func (c *Config) validateManagementClusters(p *problems) {
	names := map[string]bool{}
	defaults := 0
	for i, m := range c.ManagementClusters {
		field := fmt.Sprintf("management_clusters[%d]", i)
		if m.Name != "" {
			field = fmt.Sprintf("management_clusters[%s]", m.Name)
		}
		switch {
		case m.Name == "":
			p.add(field+".name", "required")
		case magnum.SanitizedName(m.Name) != m.Name:
			p.add(field+".name", "must be a DNS label (lower case letters, digits, '-'), got %q", m.Name)
		case names[m.Name]:
			p.add(field+".name", "names two management clusters")
		}
		names[m.Name] = true
		if m.Path == "" || path.IsAbs(m.Path) || path.Clean(m.Path) != m.Path || slices.Contains(strings.Split(m.Path, "/"), "..") {
			p.add(field+".path", "must be a clean relative path inside the repository, got %q", m.Path)
		}
		for j, o := range c.ManagementClusters[:i] {
			if m.Path != "" && (m.Path == o.Path || strings.HasPrefix(m.Path+"/", o.Path+"/") || strings.HasPrefix(o.Path+"/", m.Path+"/")) {
				p.add(field+".path", "%q overlaps management_clusters[%d].path %q: each Kustomization must apply its own clusters only", m.Path, j, o.Path)
			}
		}
		if m.Default {
			defaults++
		} else if len(m.Regions) == 0 && len(m.TemplateLabels) == 0 {
			p.add(field, "selects no cluster: give regions, template_labels or default: true")
		}
		if m.ReconcileRequest.Namespace != "" && m.ReconcileRequest.Name == "" {
			p.add(field+".reconcile_request.name", "required with reconcile_request.namespace")
		}
	}
	if defaults > 1 {
		p.add("management_clusters", "%d are marked default: at most one", defaults)
	}
}
