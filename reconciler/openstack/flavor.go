package openstack

import (
	"context"
	"fmt"

	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/flavors"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
)

// flavorRefs are the flavors the driver validates: the cluster's master flavor and every
// node group's (and the cluster's flavor_id, which Magnum gives the default worker group).
func flavorRefs(ev *v1alpha1.ClusterEvent) []string {
	seen := map[string]bool{}
	var refs []string
	add := func(f string) {
		if f != "" && !seen[f] {
			seen[f] = true
			refs = append(refs, f)
		}
	}
	add(ev.Cluster.MasterFlavorID)
	add(ev.Cluster.FlavorID)
	for _, ng := range ev.NodeGroups {
		add(ng.FlavorID)
	}
	return refs
}

// flavorsLookup lists the flavors the project can use and keeps those the event names,
// matched by id or name as the driver does. A flavor not found is left out: the generator
// then reports it as the driver would ("does not have enough RAM"). The driver lists with
// min_ram=[capi_helm] minimum_flavor_ram; listing them all lets the generator apply its
// configured minimum with the real numbers.
func (r *Resolver) flavorsLookup(project string, refs []string) lookup {
	return func(ctx context.Context) (func(*v1alpha1.Resolved), error) {
		all, err := cached(ctx, r.cache, cacheKey{project, "flavors", ""}, func(ctx context.Context) ([]flavors.Flavor, error) {
			c, err := r.client("compute", r.cloud.Compute)
			if err != nil {
				return nil, err
			}
			pages, err := flavors.ListDetail(c, flavors.ListOpts{}).AllPages(ctx)
			if err != nil {
				return nil, fmt.Errorf("nova: listing flavors: %w", err)
			}
			fs, err := flavors.ExtractFlavors(pages)
			if err != nil {
				return nil, fmt.Errorf("nova: reading flavors: %w", err)
			}
			return fs, nil
		})
		if err != nil {
			return nil, err
		}
		found := map[string]v1alpha1.Flavor{}
		for _, ref := range refs {
			for _, f := range all {
				if f.ID == ref || f.Name == ref {
					found[ref] = v1alpha1.Flavor{VCPUs: f.VCPUs, RAMMB: f.RAM, DiskGB: f.Disk}
					break
				}
			}
		}
		return func(res *v1alpha1.Resolved) { res.Flavors = found }, nil
	}
}
