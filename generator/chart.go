package generator

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"

	"github.com/Masterminds/semver/v3"
)

// Chart identifies the openstack-cluster chart a cluster is rendered for.
type Chart struct {
	// Name is the chart name, or an oci:// reference when Repository is empty.
	Name string `json:"name"`
	// Repository is the HTTP(S) Helm repository URL; empty for OCI.
	Repository string `json:"repository,omitempty"`
	// Version is the exact chart version; empty means the newest.
	Version string `json:"version,omitempty"`
	parsed  *semver.Version
}

// IsOCI reports whether the chart comes from an OCI registry.
func (c Chart) IsOCI() bool { return strings.HasPrefix(c.Name, "oci://") }

// atLeast reports whether the chart version is at least v. An empty version means "the
// newest chart", which has every feature.
func (c Chart) atLeast(v string) bool {
	if c.parsed == nil {
		return true
	}
	return !c.parsed.LessThan(sinceVersion(v))
}

// sinceVersion is semver.MustParse(v) for the constant versions that introduced a value.
func sinceVersion(v string) *semver.Version {
	p, err := parseVersion(v)
	if err != nil {
		panic(err)
	}
	return p
}

// parsedVersions caches parseVersion: every render parses its chart's version and asks
// atLeast about a few constant ones, and semver parses with a regexp. A site uses a handful
// of chart versions; only versions that parse are kept, and at most maxParsedVersions of
// them, so that odd labels cannot grow the cache. The cached values are shared: nothing
// modifies a parsed version.
var (
	parsedVersions  sync.Map // string → *semver.Version
	nParsedVersions atomic.Int32
)

const maxParsedVersions = 256

// parseVersion is semver.NewVersion(v), cached.
func parseVersion(v string) (*semver.Version, error) {
	if p, ok := parsedVersions.Load(v); ok {
		return p.(*semver.Version), nil
	}
	p, err := semver.NewVersion(v)
	if err != nil {
		return nil, err
	}
	if nParsedVersions.Load() < maxParsedVersions && nParsedVersions.Add(1) <= maxParsedVersions {
		parsedVersions.Store(v, p)
	}
	return p, nil
}

// chartFor picks the chart like the driver: the template label capi_helm_chart_version
// (cluster labels are not consulted), else [capi_helm] default_helm_chart_version, with
// characters outside [a-z0-9.-+] deleted. A label that is present but empty means what it
// means to the driver — no --version, the newest chart — and never the default, which
// would downgrade a cluster the driver installed with a newer chart. A version is read the
// way Helm reads one (Masterminds semver: "v0.20.0", "0.20"), refused when Helm would
// refuse it, and written in its canonical form.
func chartFor(ev *v1alpha1.ClusterEvent, cfg *Config, p *problems) (Chart, []Deviation) {
	c := Chart{Name: cfg.Magnum.CapiHelm.HelmChartName, Repository: cfg.Magnum.CapiHelm.HelmChartRepo}
	field := "magnum.capi_helm.default_helm_chart_version"
	v := cfg.Magnum.CapiHelm.DefaultHelmChartVersion
	if lv, ok := ev.ClusterTemplate.Labels["capi_helm_chart_version"]; ok {
		field, v = "cluster_template.labels.capi_helm_chart_version", lv
	}
	var devs []Deviation
	c.Version = notChartVersionChars.ReplaceAllString(v, "")
	if c.Version != "" {
		parsed, err := parseVersion(c.Version)
		if err != nil {
			p.add(field, "%q is not a chart version Helm accepts (want X.Y.Z, optionally v-prefixed)", c.Version)
		} else {
			c.parsed = parsed
			if canonical := parsed.String(); canonical != c.Version {
				devs = append(devs, Deviation{Key: "chart.version", Reason: fmt.Sprintf(
					"%q is written as %q, the version Helm resolves it to; the driver passes it to helm verbatim", c.Version, canonical)})
				c.Version = canonical
			}
		}
	}
	if c.IsOCI() {
		c.Repository = ""
	}
	checkCAPOVersion(c, cfg, field, p)
	return c, devs
}

// capoV1beta1Since is the first chart version whose CAPO objects are
// infrastructure.cluster.x-k8s.io/v1beta1; older charts write v1alpha7, which CAPO ≥ 0.12
// no longer serves.
var capoV1beta1Since = semver.MustParse("0.11.0")

// CAPOAPIVersion is the OpenStackCluster API version a chart version writes; the newest
// chart ("") writes v1beta1.
func (c Chart) CAPOAPIVersion() string {
	if c.parsed != nil && c.parsed.LessThan(capoV1beta1Since) {
		return "v1alpha7"
	}
	return "v1beta1"
}

// checkCAPOVersion refuses a chart whose CAPO objects the management cluster cannot
// store, when the site says which CAPO API versions it serves: helm-controller would
// otherwise fail every install with "no matches for kind OpenStackCluster".
func checkCAPOVersion(c Chart, cfg *Config, field string, p *problems) {
	served := cfg.ManagementCluster.CAPOAPIVersions
	if len(served) == 0 || slices.Contains(served, c.CAPOAPIVersion()) {
		return
	}
	p.add(field, "chart %s writes infrastructure.cluster.x-k8s.io/%s objects, which the management cluster's CAPO does not serve (management_cluster.capo_api_versions: %s); use chart 0.11.0 or newer",
		c.Version, c.CAPOAPIVersion(), strings.Join(served, ", "))
}
