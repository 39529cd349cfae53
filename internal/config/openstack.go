package config

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/magnum-gitops/magnum-gitops/generator"
)

// OpenStack is the --config "openstack:" section: how magnum-gitops reaches
// OpenStack (a clouds.yaml entry, or the OS_* variables when cloud is empty, as every
// OpenStack client does) and, for serve --source magnum, how it polls Magnum. It holds no
// secret: the credentials stay in clouds.yaml or the environment.
type OpenStack struct {
	// Cloud names the clouds.yaml entry (default $OS_CLOUD, else the OS_* variables).
	Cloud string `json:"cloud,omitempty"`
	// CloudsFile is the clouds.yaml path (default $OS_CLIENT_CONFIG_FILE, ./clouds.yaml,
	// ~/.config/openstack/clouds.yaml, /etc/openstack/clouds.yaml).
	CloudsFile string `json:"clouds_file,omitempty"`
	// Region selects the catalog's endpoints (clouds.yaml region_name).
	Region string `json:"region,omitempty"`
	// CAFile is a PEM bundle trusted for TLS to OpenStack (clouds.yaml cacert).
	CAFile string `json:"ca_file,omitempty"`
	// Insecure skips TLS verification (clouds.yaml verify: false); never in production.
	Insecure *bool `json:"insecure,omitempty"`
	// Interface is public (default), internal or admin.
	Interface string `json:"interface,omitempty"`
	// Timeout bounds each request (default 60s).
	Timeout generator.Duration `json:"timeout,omitempty"`
	// CacheTTL is how long the resolver reuses a lookup (default 60s).
	CacheTTL generator.Duration `json:"cache_ttl,omitempty"`
	Poller   Poller             `json:"poller,omitempty"`
}

// Poller is the "openstack.poller:" section.
type Poller struct {
	// Interval between passes (default 1m).
	Interval generator.Duration `json:"interval,omitempty"`
	// PageSize is how many clusters and templates each Magnum request reads (default 100).
	PageSize int `json:"page_size,omitempty"`
	// Select picks the templates whose clusters this service manages: a template label
	// ("gitops=true", or "gitops" for any value) and/or the template's Magnum driver
	// (Magnum 2024.1+). At least one is required; with both, both must match.
	Select struct {
		Label  string `json:"label,omitempty"`
		Driver string `json:"driver,omitempty"`
	} `json:"select,omitempty"`
	// ApplicationCredentials says where a new cluster's application credential comes
	// from: "service" (default) creates it with the service's own credentials, so it
	// belongs to the service's user and project; "none" commits the cluster without a
	// cloud-credentials Secret (something else must provide it).
	ApplicationCredentials string `json:"application_credentials,omitempty"`
	// CreateGrace is how long after its created_at a new cluster Magnum shows
	// CREATE_IN_PROGRESS is left to the driver shim, which posts create_cluster with the
	// user's credential and Magnum's CA seconds after Magnum lists it (default 5m, see
	// poller.Poller.CreateGrace). A pointer: 0s is a choice, no grace, for a site
	// without the shim.
	CreateGrace *generator.Duration `json:"create_grace,omitempty"`
}

// Grace is the poller.Poller's CreateGrace the section asks for: the poller's default
// when unset, none (negative) for 0s.
func (p *Poller) Grace() time.Duration {
	switch {
	case p.CreateGrace == nil:
		return 0
	case p.CreateGrace.Duration == 0:
		return -1
	}
	return p.CreateGrace.Duration
}

// Validate checks the section without reaching OpenStack; Load calls it. The poller's
// template selection is checked where the poller is built, since only serve --source
// magnum needs one.
func (c *OpenStack) Validate() error {
	p := c.Poller
	switch {
	case c.Timeout.Duration < 0:
		return errors.New("openstack.timeout: must not be negative")
	case c.CacheTTL.Duration < 0:
		return errors.New("openstack.cache_ttl: must not be negative")
	case p.Interval.Duration < 0:
		return errors.New("openstack.poller.interval: must not be negative")
	case p.CreateGrace != nil && p.CreateGrace.Duration < 0:
		return errors.New("openstack.poller.create_grace: must not be negative (0s turns the grace off)")
	case p.PageSize < 0:
		return errors.New("openstack.poller.page_size: must not be negative")
	case !slices.Contains([]string{"", "service", "none"}, p.ApplicationCredentials):
		return fmt.Errorf("openstack.poller.application_credentials: %q: want service or none", p.ApplicationCredentials)
	}
	return nil
}
