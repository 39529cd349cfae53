package openstack

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/image/v2/images"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/magnum"
)

// imageLookup resolves the template's image when the event carries none, or completes
// the properties of the image it names.
func (r *Resolver) imageLookup(ev *v1alpha1.ClusterEvent, project string) lookup {
	have := ev.Resolved.Image
	switch {
	case have == nil || have.ID == "":
		ref := ev.ClusterTemplate.ImageID
		if ref == "" {
			return func(context.Context) (func(*v1alpha1.Resolved), error) {
				return nil, fieldError("cluster_template.image_id", "required: the Glance image (name or id) of the cluster")
			}
		}
		return func(ctx context.Context) (func(*v1alpha1.Resolved), error) {
			img, err := r.image(ctx, project, ref, "cluster_template.image_id")
			if err != nil {
				return nil, err
			}
			return func(res *v1alpha1.Resolved) { res.Image = &img }, nil
		}
	case have.KubeVersion == "" || have.OSDistro == "":
		id := have.ID
		if !magnum.IsUUIDLike(id) {
			// A pinned image is pinned by id; a name here would be looked up as one.
			return func(context.Context) (func(*v1alpha1.Resolved), error) {
				return nil, fieldError("resolved.image.id", fmt.Sprintf("%q is not a Glance image UUID", id))
			}
		}
		return func(ctx context.Context) (func(*v1alpha1.Resolved), error) {
			img, err := r.image(ctx, project, id, "resolved.image.id")
			if err != nil {
				return nil, err
			}
			return func(res *v1alpha1.Resolved) {
				res.Image.KubeVersion = cmp.Or(res.Image.KubeVersion, img.KubeVersion)
				res.Image.OSDistro = cmp.Or(res.Image.OSDistro, img.OSDistro)
			}, nil
		}
	}
	return nil
}

// image finds an image by id or name like the driver (magnum.api.utils
// get_openstack_resource): a UUID is fetched, a name listed and must match once.
func (r *Resolver) image(ctx context.Context, project, ref, field string) (v1alpha1.Image, error) {
	return cached(ctx, r.cache, cacheKey{project, "image", ref}, func(ctx context.Context) (v1alpha1.Image, error) {
		c, err := r.client("image", r.cloud.Image)
		if err != nil {
			return v1alpha1.Image{}, err
		}
		var img *images.Image
		if magnum.IsUUIDLike(ref) {
			img, err = images.Get(ctx, c, ref).Extract()
			if gophercloud.ResponseCodeIs(err, 404) {
				return v1alpha1.Image{}, fieldError(field, fmt.Sprintf("images %s could not be found.", ref))
			}
			if err != nil {
				return v1alpha1.Image{}, fmt.Errorf("glance: getting image %s: %w", ref, err)
			}
		} else {
			pages, err := images.List(c, images.ListOpts{Name: ref}).AllPages(ctx)
			if err != nil {
				return v1alpha1.Image{}, fmt.Errorf("glance: listing images named %q: %w", ref, err)
			}
			all, err := images.ExtractImages(pages)
			if err != nil {
				return v1alpha1.Image{}, fmt.Errorf("glance: reading images named %q: %w", ref, err)
			}
			var matches []images.Image
			for _, i := range all {
				if i.Name == ref {
					matches = append(matches, i)
				}
			}
			matches = narrowToProject(matches, func(i images.Image) string { return i.Owner }, project)
			switch len(matches) {
			case 0:
				return v1alpha1.Image{}, fieldError(field, fmt.Sprintf("images %s could not be found.", ref))
			case 1:
				img = &matches[0]
			default:
				return v1alpha1.Image{}, fieldError(field, fmt.Sprintf(
					"Multiple images exist with same name %s. Please use the resource id instead.", ref))
			}
		}
		return imageFacts(field, img)
	})
}

// imageFacts reads what the driver reads from an image. glanceclient's image.get(key) and
// openstacksdk's image.properties[key] both read Glance v2's top-level custom properties,
// which gophercloud gathers in Properties. kube_version is kept as written ("v1.33.7"):
// the generator strips the "v" and refuses suffixed versions the driver would mangle
// ("1.28.3+k3s1" → "1.28.331").
func imageFacts(field string, img *images.Image) (v1alpha1.Image, error) {
	if !magnum.IsUUIDLike(img.ID) {
		return v1alpha1.Image{}, fieldError(field, fmt.Sprintf("Glance returned image id %q, which is not a UUID", img.ID))
	}
	out := v1alpha1.Image{ID: img.ID, KubeVersion: property(img, "kube_version"), OSDistro: property(img, "os_distro")}
	var errs v1alpha1.InputErrors
	if out.KubeVersion == "" {
		errs = append(errs, &v1alpha1.FieldError{Field: field,
			Message: fmt.Sprintf("Image %s does not have a kube_version property.", img.ID)})
	}
	if out.OSDistro == "" {
		errs = append(errs, &v1alpha1.FieldError{Field: field,
			Message: fmt.Sprintf("Image %s does not have an os_distro property.", img.ID)})
	}
	if len(errs) > 0 {
		return v1alpha1.Image{}, errs
	}
	return out, nil
}

func property(img *images.Image, key string) string {
	v, _ := img.Properties[key].(string)
	return strings.TrimSpace(v)
}

// upgradeImagesLookup lists, for an upgrade_cluster that names none, the images a chained
// upgrade may step through (generator.RenderUpgradeStep): of the active images the project
// sees with a kube_version that is a Kubernetes release and an os_distro, the newest patch
// of each minor version and distribution.
func (r *Resolver) upgradeImagesLookup(project string) lookup {
	return func(ctx context.Context) (func(*v1alpha1.Resolved), error) {
		imgs, err := cached(ctx, r.cache, cacheKey{project, "upgrade images", ""}, func(ctx context.Context) ([]v1alpha1.Image, error) {
			c, err := r.client("image", r.cloud.Image)
			if err != nil {
				return nil, err
			}
			pages, err := images.List(c, images.ListOpts{Status: images.ImageStatusActive}).AllPages(ctx)
			if err != nil {
				return nil, fmt.Errorf("glance: listing images: %w", err)
			}
			all, err := images.ExtractImages(pages)
			if err != nil {
				return nil, fmt.Errorf("glance: reading images: %w", err)
			}
			return newestPerMinor(all), nil
		})
		if err != nil {
			return nil, err
		}
		return func(res *v1alpha1.Resolved) { res.UpgradeImages = imgs }, nil
	}
}

// newestPerMinor keeps, of the images with a kube_version release and an os_distro, the
// newest of each minor version and distribution, sorted by distribution and version.
func newestPerMinor(all []images.Image) []v1alpha1.Image {
	type key struct {
		distro       string
		major, minor uint64
	}
	type found struct {
		v   *semver.Version
		img v1alpha1.Image
	}
	best := map[key]found{}
	for i := range all {
		img := &all[i]
		kv, distro := property(img, "kube_version"), property(img, "os_distro")
		v, err := semver.StrictNewVersion(strings.TrimPrefix(kv, "v"))
		if err != nil || v.Prerelease() != "" || v.Metadata() != "" || distro == "" || !magnum.IsUUIDLike(img.ID) {
			continue
		}
		k := key{distro, v.Major(), v.Minor()}
		if b, ok := best[k]; !ok || b.v.LessThan(v) {
			best[k] = found{v, v1alpha1.Image{ID: img.ID, KubeVersion: kv, OSDistro: distro}}
		}
	}
	keys := slices.SortedFunc(maps.Keys(best), func(a, b key) int {
		return cmp.Or(cmp.Compare(a.distro, b.distro), cmp.Compare(a.major, b.major), cmp.Compare(a.minor, b.minor))
	})
	list := make([]v1alpha1.Image, len(keys))
	for i, k := range keys {
		list[i] = best[k].img
	}
	return list
}
