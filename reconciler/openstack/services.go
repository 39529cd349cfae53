package openstack

import (
	"cmp"
	"errors"
	"fmt"

	"github.com/gophercloud/gophercloud/v2"
	gcopenstack "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/tokens"
)

// Identity returns an identity v3 client.
func (c *Cloud) Identity() (*gophercloud.ServiceClient, error) {
	return c.service("identity", gcopenstack.NewIdentityV3)
}

// Image returns a Glance v2 client.
func (c *Cloud) Image() (*gophercloud.ServiceClient, error) {
	return c.service("image", gcopenstack.NewImageV2)
}

// Network returns a Neutron v2.0 client.
func (c *Cloud) Network() (*gophercloud.ServiceClient, error) {
	return c.service("network", gcopenstack.NewNetworkV2)
}

// BlockStorage returns a Cinder v3 client.
func (c *Cloud) BlockStorage() (*gophercloud.ServiceClient, error) {
	return c.service("block-storage", gcopenstack.NewBlockStorageV3)
}

// Compute returns a Nova v2.1 client.
func (c *Cloud) Compute() (*gophercloud.ServiceClient, error) {
	return c.service("compute", gcopenstack.NewComputeV2)
}

// ContainerInfra returns a Magnum v1 client without a microversion; NewMagnum sets one.
func (c *Cloud) ContainerInfra() (*gophercloud.ServiceClient, error) {
	return c.service("container-infra", gcopenstack.NewContainerInfraV1)
}

// service finds a service in the token's catalog (gophercloud also checks the endpoint
// serves the expected major version).
func (c *Cloud) service(kind string, newClient func(*gophercloud.ProviderClient, gophercloud.EndpointOpts) (*gophercloud.ServiceClient, error)) (*gophercloud.ServiceClient, error) {
	sc, err := newClient(c.Provider, c.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("openstack: %s endpoint (interface %s, region %q): %w",
			kind, availability(c.Endpoint), c.Endpoint.Region, err)
	}
	return sc, nil
}

func availability(eo gophercloud.EndpointOpts) gophercloud.Availability {
	if eo.Availability == "" {
		return gophercloud.AvailabilityPublic
	}
	return eo.Availability
}

// authResult is the token this session authenticated with (refreshed on re-authentication).
func (c *Cloud) authResult() (tokens.CreateResult, error) {
	res, ok := c.Provider.GetAuthResult().(tokens.CreateResult)
	if !ok {
		return tokens.CreateResult{}, errors.New("openstack: the session has no Keystone v3 token")
	}
	return res, nil
}

// UserID is the id of the user the session's token belongs to.
func (c *Cloud) UserID() (string, error) {
	res, err := c.authResult()
	if err != nil {
		return "", err
	}
	u, err := res.ExtractUser()
	if err != nil {
		return "", fmt.Errorf("openstack: reading the token's user: %w", err)
	}
	return u.ID, nil
}

// Roles are the names of the roles the session's token carries on its scope.
func (c *Cloud) Roles() ([]string, error) {
	res, err := c.authResult()
	if err != nil {
		return nil, err
	}
	rs, err := res.ExtractRoles()
	if err != nil {
		return nil, fmt.Errorf("openstack: reading the token's roles: %w", err)
	}
	names := make([]string, 0, len(rs))
	for _, r := range rs {
		names = append(names, r.Name)
	}
	return names, nil
}

// ProjectID is the id of the project the session's token is scoped to ("" if unscoped).
func (c *Cloud) ProjectID() (string, error) {
	res, err := c.authResult()
	if err != nil {
		return "", err
	}
	p, err := res.ExtractProject()
	if err != nil {
		return "", fmt.Errorf("openstack: reading the token's project: %w", err)
	}
	if p == nil {
		return "", nil
	}
	return p.ID, nil
}

// IdentityEndpoint returns the catalog's identity endpoint for the session's interface
// (public unless configured otherwise) and region, with the region it is in. The driver
// writes this endpoint and region into every cluster's clouds.yaml.
func (c *Cloud) IdentityEndpoint() (url, region string, err error) {
	res, err := c.authResult()
	if err != nil {
		return "", "", err
	}
	cat, err := res.ExtractServiceCatalog()
	if err != nil {
		return "", "", fmt.Errorf("openstack: reading the token's catalog: %w", err)
	}
	iface := availability(c.Endpoint)
	for _, e := range cat.Entries {
		if e.Type != "identity" {
			continue
		}
		for _, ep := range e.Endpoints {
			r := cmp.Or(ep.RegionID, ep.Region)
			if gophercloud.Availability(ep.Interface) != iface || (c.Endpoint.Region != "" && r != c.Endpoint.Region) {
				continue
			}
			return ep.URL, r, nil
		}
	}
	return "", "", fmt.Errorf("openstack: no %s identity endpoint in region %q in the catalog", iface, c.Endpoint.Region)
}
