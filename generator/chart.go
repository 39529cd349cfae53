package generator

import (
	"regexp"
	"strings"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"

	"github.com/Masterminds/semver/v3"
)

var chartVersionCharsRE = regexp.MustCompile(`[^a-z0-9.\-+]`)

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
	return !c.parsed.LessThan(semver.MustParse(v))
}

// chartFor picks the chart like the driver: the template label capi_helm_chart_version
// (cluster labels are not consulted), else [capi_helm] default_helm_chart_version, with
// characters outside [a-z0-9.-+] deleted.
func chartFor(ev *v1alpha1.ClusterEvent, cfg *Config, p *problems) Chart {
	c := Chart{Name: cfg.Magnum.CapiHelm.HelmChartName, Repository: cfg.Magnum.CapiHelm.HelmChartRepo}
	field := "magnum.capi_helm.default_helm_chart_version"
	v := cfg.Magnum.CapiHelm.DefaultHelmChartVersion
	if lv := ev.ClusterTemplate.Labels["capi_helm_chart_version"]; lv != "" {
		field, v = "cluster_template.labels.capi_helm_chart_version", lv
	}
	c.Version = chartVersionCharsRE.ReplaceAllString(v, "")
	if c.Version != "" {
		parsed, err := semver.StrictNewVersion(c.Version)
		if err != nil {
			p.add(field, "%q is not a chart version (want X.Y.Z)", c.Version)
		} else {
			c.parsed = parsed
		}
	}
	if c.IsOCI() {
		c.Repository = ""
	}
	return c
}
