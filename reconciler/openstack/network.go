package openstack

import (
	"context"
	"fmt"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/external"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
)

// networkLookup resolves a network name to its id among the external networks
// (router:external=True, the template's external_network_id) or the others (the fixed
// network), like magnum.common.neutron.
func (r *Resolver) networkLookup(project, ref, field string, isExternal bool) lookup {
	return func(ctx context.Context) (func(*v1alpha1.Resolved), error) {
		id, err := r.network(ctx, project, ref, field, isExternal)
		if err != nil {
			return nil, err
		}
		return func(res *v1alpha1.Resolved) { res.Networks = with(res.Networks, ref, id) }, nil
	}
}

func (r *Resolver) network(ctx context.Context, project, ref, field string, isExternal bool) (string, error) {
	kind := "network:fixed"
	if isExternal {
		kind = "network:external"
	}
	return cached(ctx, r.cache, cacheKey{project, kind, ref}, func(ctx context.Context) (string, error) {
		c, err := r.client("network", r.cloud.Network)
		if err != nil {
			return "", err
		}
		opts := external.ListOptsExt{ListOptsBuilder: networks.ListOpts{Name: ref}, External: &isExternal}
		pages, err := networks.List(c, opts).AllPages(ctx)
		if err != nil {
			return "", fmt.Errorf("neutron: listing networks named %q: %w", ref, err)
		}
		all, err := networks.ExtractNetworks(pages)
		if err != nil {
			return "", fmt.Errorf("neutron: reading networks named %q: %w", ref, err)
		}
		var matches []networks.Network
		for _, n := range all {
			if n.Name == ref {
				matches = append(matches, n)
			}
		}
		matches = narrowToProject(matches, func(n networks.Network) string { return n.ProjectID }, project)
		switch len(matches) {
		case 0:
			if isExternal {
				return "", fieldError(field, fmt.Sprintf("Unable to find external network %s.", ref))
			}
			return "", fieldError(field, fmt.Sprintf("Unable to find fixed network %s.", ref))
		case 1:
			return matches[0].ID, nil
		}
		return "", fieldError(field, fmt.Sprintf(
			"Multiple networks exist with same name '%s'. Please use the network ID instead.", ref))
	})
}

// subnetLookup resolves the fixed subnet's name to its id (neutron.get_fixed_subnet_id).
func (r *Resolver) subnetLookup(project, ref, field string) lookup {
	return func(ctx context.Context) (func(*v1alpha1.Resolved), error) {
		id, err := cached(ctx, r.cache, cacheKey{project, "subnet", ref}, func(ctx context.Context) (string, error) {
			c, err := r.client("network", r.cloud.Network)
			if err != nil {
				return "", err
			}
			pages, err := subnets.List(c, subnets.ListOpts{Name: ref}).AllPages(ctx)
			if err != nil {
				return "", fmt.Errorf("neutron: listing subnets named %q: %w", ref, err)
			}
			all, err := subnets.ExtractSubnets(pages)
			if err != nil {
				return "", fmt.Errorf("neutron: reading subnets named %q: %w", ref, err)
			}
			var matches []subnets.Subnet
			for _, s := range all {
				if s.Name == ref {
					matches = append(matches, s)
				}
			}
			matches = narrowToProject(matches, func(s subnets.Subnet) string { return s.ProjectID }, project)
			switch len(matches) {
			case 0:
				return "", fieldError(field, fmt.Sprintf("Unable to find fixed subnet %s.", ref))
			case 1:
				return matches[0].ID, nil
			}
			return "", fieldError(field, fmt.Sprintf(
				"Multiple subnets exist with same name '%s'. Please use the subnet ID instead.", ref))
		})
		if err != nil {
			return nil, err
		}
		return func(res *v1alpha1.Resolved) { res.Subnets = with(res.Subnets, ref, id) }, nil
	}
}

// with sets m[k] = v, making m if needed.
func with(m map[string]string, k, v string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	m[k] = v
	return m
}
