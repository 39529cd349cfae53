package openstack

import (
	"context"
	"fmt"

	"github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/volumetypes"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
)

// volumeTypesLookup lists every Cinder volume type name in Cinder's order, unfiltered like
// the driver's volume_types.list(): the first becomes the default StorageClass unless
// configured otherwise.
func (r *Resolver) volumeTypesLookup(project string) lookup {
	return func(ctx context.Context) (func(*v1alpha1.Resolved), error) {
		names, err := cached(ctx, r.cache, cacheKey{project, "volume-types", ""}, func(ctx context.Context) ([]string, error) {
			c, err := r.client("block-storage", r.cloud.BlockStorage)
			if err != nil {
				return nil, err
			}
			pages, err := volumetypes.List(c, volumetypes.ListOpts{}).AllPages(ctx)
			if err != nil {
				return nil, fmt.Errorf("cinder: listing volume types: %w", err)
			}
			types, err := volumetypes.ExtractVolumeTypes(pages)
			if err != nil {
				return nil, fmt.Errorf("cinder: reading volume types: %w", err)
			}
			names := make([]string, 0, len(types))
			for _, t := range types {
				names = append(names, t.Name)
			}
			return names, nil
		})
		if err != nil {
			return nil, err
		}
		return func(res *v1alpha1.Resolved) {
			// A copy: the cached list is shared with every other event.
			res.VolumeTypes = append([]string{}, names...)
		}, nil
	}
}
