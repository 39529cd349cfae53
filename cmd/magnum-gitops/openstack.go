package main

import (
	"context"
	"fmt"
	"log/slog"
	"slices"

	"github.com/magnum-gitops/magnum-gitops/internal/config"
	"github.com/magnum-gitops/magnum-gitops/reconciler/openstack"
	"github.com/magnum-gitops/magnum-gitops/reconciler/poller"
)

// connectOpenStack authenticates to OpenStack as the section says.
func connectOpenStack(ctx context.Context, c *config.OpenStack) (*openstack.Cloud, error) {
	return openstack.Connect(ctx, openstack.Config{Cloud: c.Cloud, CloudsFile: c.CloudsFile, Region: c.Region,
		CAFile: c.CAFile, Insecure: c.Insecure, Interface: c.Interface, Timeout: c.Timeout.Duration})
}

// openstackResolver fills the events' "resolved" section from OpenStack (add it to the pipeline's
// resolvers before the CA bundle).
func openstackResolver(c *config.OpenStack, cloud *openstack.Cloud) *openstack.Resolver {
	return openstack.NewResolver(cloud, openstack.ResolverOptions{CacheTTL: c.CacheTTL.Duration})
}

// magnumPoller builds the Magnum poller of serve --source magnum. Its Clusters and Submit are
// the service's (set them before running it). Clusters that vanish from Magnum's list are
// deleted from Git only when the session has the admin role: Magnum lists every project's
// clusters to admins only, and to anyone else a cluster of another project is merely
// invisible.
func magnumPoller(c *config.OpenStack, cloud *openstack.Cloud, log *slog.Logger) (*poller.Poller, error) {
	sel, err := poller.SelectTemplates(c.Poller.Select.Label, c.Poller.Select.Driver)
	if err != nil {
		return nil, fmt.Errorf("openstack.poller.%w", err)
	}
	m, err := openstack.NewMagnum(cloud)
	if err != nil {
		return nil, err
	}
	authURL, _, err := cloud.IdentityEndpoint()
	if err != nil {
		return nil, err
	}
	roles, err := cloud.Roles()
	if err != nil {
		return nil, err
	}
	p := &poller.Poller{Magnum: m, Select: sel, AuthURL: authURL, AllProjects: slices.Contains(roles, "admin"),
		Interval: c.Poller.Interval.Duration, PageSize: c.Poller.PageSize, CreateGrace: c.Poller.Grace(), Log: log}
	if !p.AllProjects {
		log.Warn("openstack: the poller's credentials lack the admin role: Magnum shows them only their own project's clusters, and clusters missing from its list are never deleted from git")
	}
	if c.Poller.ApplicationCredentials != "none" {
		identity, err := cloud.Identity()
		if err != nil {
			return nil, err
		}
		p.Credentials = poller.ServiceCredentials(&openstack.AppCredentials{Identity: identity})
	}
	return p, nil
}
