package openstack

import (
	"cmp"
	"context"
	"errors"
	"sync"
	"time"

	"github.com/gophercloud/gophercloud/v2"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/magnum"
)

// DefaultCacheTTL is how long a Resolver reuses a lookup: long enough that a burst of
// events costs one call per distinct lookup, short enough that a renamed image or a new
// volume type shows up within a minute.
const DefaultCacheTTL = 60 * time.Second

// ResolverOptions tune a Resolver.
type ResolverOptions struct {
	// CacheTTL is how long a lookup is reused; zero means DefaultCacheTTL.
	CacheTTL time.Duration
	// Now is the cache's clock; nil means time.Now.
	Now func() time.Time
}

// Resolver fills in the OpenStack facts a ClusterEvent leaves out of its "resolved"
// section, looking them up the way the magnum-capi-helm driver does at every render:
// the Glance image, Neutron networks and subnets, every Cinder volume type, the Nova
// flavors the event names, and the public identity endpoint and region. It is safe for
// concurrent use; lookups are shared between events through a short cache.
//
// Lookups see what the Cloud's credentials see. The driver looks up with the requesting
// user's token; a service account that is admin sees more (every project's private images
// and networks), so when a name matches several resources, the one owned by the event's
// project is taken if there is exactly one.
type Resolver struct {
	cloud *Cloud
	cache *cache

	mu      sync.Mutex
	clients map[string]*clientSlot
}

// clientSlot holds one service's client; its own lock keeps discovering one service from
// waiting for another's.
type clientSlot struct {
	mu sync.Mutex
	c  *gophercloud.ServiceClient
}

// NewResolver returns a Resolver looking up with cloud's credentials.
func NewResolver(cloud *Cloud, opts ResolverOptions) *Resolver {
	ttl := cmp.Or(opts.CacheTTL, DefaultCacheTTL)
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	return &Resolver{cloud: cloud, cache: newCache(ttl, now), clients: map[string]*clientSlot{}}
}

// lookup is one question about OpenStack; its answer is applied to the event only after
// every lookup has finished, so the event is written by one goroutine.
type lookup func(ctx context.Context) (apply func(*v1alpha1.Resolved), err error)

// Resolve fills what ev.Resolved leaves out: each fact is looked up only when absent, so
// an event may pin any of them. delete_cluster events render no values and are left
// alone. Errors blaming the event are returned together as v1alpha1.InputErrors; if any
// lookup failed otherwise (OpenStack unreachable, refused, broken), that error is
// returned instead, since the event may be fine and retrying may succeed. ev is only
// changed when Resolve succeeds.
func (r *Resolver) Resolve(ctx context.Context, ev *v1alpha1.ClusterEvent) error {
	if ev.Operation == v1alpha1.DeleteCluster {
		return nil
	}
	project := cmp.Or(ev.Cluster.ProjectID, ev.Context.ProjectID)
	lookups := r.lookups(ev, project)
	applies := make([]func(*v1alpha1.Resolved), len(lookups))
	errs := make([]error, len(lookups))
	var wg sync.WaitGroup
	for i, l := range lookups {
		wg.Go(func() { applies[i], errs[i] = l(ctx) })
	}
	wg.Wait()

	var input v1alpha1.InputErrors
	var other []error
	for _, err := range errs {
		switch fes := v1alpha1.FieldErrors(err); {
		case err == nil:
		case len(fes) > 0:
			input = append(input, fes...)
		default:
			other = append(other, err)
		}
	}
	if len(other) > 0 {
		return errors.Join(other...)
	}
	if len(input) > 0 {
		return input
	}
	for _, apply := range applies {
		if apply != nil {
			apply(&ev.Resolved)
		}
	}
	return nil
}

// lookups lists the questions the event leaves open, in the order their errors are
// reported.
func (r *Resolver) lookups(ev *v1alpha1.ClusterEvent, project string) []lookup {
	res := ev.Resolved
	var out []lookup
	if l := r.imageLookup(ev, project); l != nil {
		out = append(out, l)
	}
	if ev.Operation == v1alpha1.UpgradeCluster && res.UpgradeImages == nil {
		out = append(out, r.upgradeImagesLookup(project))
	}
	if ref := ev.ClusterTemplate.ExternalNetworkID; needsName(ref, res.Networks) {
		out = append(out, r.networkLookup(project, ref, "cluster_template.external_network_id", true))
	}
	if ref, field := fixedRef(ev.Cluster.FixedNetwork, ev.ClusterTemplate.FixedNetwork, "fixed_network"); needsName(ref, res.Networks) {
		out = append(out, r.networkLookup(project, ref, field, false))
	}
	if ref, field := fixedRef(ev.Cluster.FixedSubnet, ev.ClusterTemplate.FixedSubnet, "fixed_subnet"); needsName(ref, res.Subnets) {
		out = append(out, r.subnetLookup(project, ref, field))
	}
	if res.VolumeTypes == nil {
		out = append(out, r.volumeTypesLookup(project))
	}
	if refs := flavorRefs(ev); res.Flavors == nil && len(refs) > 0 {
		out = append(out, r.flavorsLookup(project, refs))
	}
	if res.KeystonePublicURL == "" || res.RegionName == "" {
		out = append(out, r.identityLookup())
	}
	return out
}

// needsName reports whether a network or subnet reference must be looked up: the driver
// uses a UUID as it is and resolves only names.
func needsName(ref string, resolved map[string]string) bool {
	return ref != "" && !magnum.IsUUIDLike(ref) && resolved[ref] == ""
}

// fixedRef is the cluster's value, else the template's (Magnum's API copies the
// template's into the cluster at creation, so both may be seen), with its field path.
func fixedRef(cluster, template, name string) (ref, field string) {
	if cluster != "" {
		return cluster, "cluster." + name
	}
	return template, "cluster_template." + name
}

// identityLookup reads the public identity endpoint and its region from the token's
// catalog, as the driver does from the request's; the configured region wins, like
// [cinder_client] region_name. It makes no request.
func (r *Resolver) identityLookup() lookup {
	return func(context.Context) (func(*v1alpha1.Resolved), error) {
		url, region, err := r.cloud.IdentityEndpoint()
		if err != nil {
			return nil, err
		}
		region = cmp.Or(r.cloud.Endpoint.Region, region)
		return func(res *v1alpha1.Resolved) {
			res.KeystonePublicURL = cmp.Or(res.KeystonePublicURL, url)
			res.RegionName = cmp.Or(res.RegionName, region)
		}, nil
	}
}

// client returns the service client of one kind, found in the catalog on first use (with
// gophercloud's version discovery) and kept.
func (r *Resolver) client(kind string, find func() (*gophercloud.ServiceClient, error)) (*gophercloud.ServiceClient, error) {
	r.mu.Lock()
	slot := r.clients[kind]
	if slot == nil {
		slot = &clientSlot{}
		r.clients[kind] = slot
	}
	r.mu.Unlock()
	slot.mu.Lock()
	defer slot.mu.Unlock()
	if slot.c == nil {
		c, err := find()
		if err != nil {
			return nil, err // not kept: the next lookup tries again
		}
		slot.c = c
	}
	return slot.c, nil
}

// narrowToProject keeps, among several matches, the one owned by project if exactly one
// is; otherwise it returns the matches unchanged.
func narrowToProject[T any](matches []T, owner func(T) string, project string) []T {
	if len(matches) < 2 || project == "" {
		return matches
	}
	var owned []T
	for _, m := range matches {
		if owner(m) == project {
			owned = append(owned, m)
		}
	}
	if len(owned) == 1 {
		return owned
	}
	return matches
}

func fieldError(field, msg string) error {
	return &v1alpha1.FieldError{Field: field, Message: msg}
}
