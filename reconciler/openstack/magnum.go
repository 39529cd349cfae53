package openstack

import (
	"context"
	"fmt"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/containerinfra/v1/clusters"
	"github.com/gophercloud/gophercloud/v2/openstack/containerinfra/v1/clustertemplates"
	"github.com/gophercloud/gophercloud/v2/openstack/containerinfra/v1/nodegroups"
	"github.com/gophercloud/gophercloud/v2/pagination"
)

// MagnumMicroversion is the container-infra API version the client speaks: 1.10 is the
// first with node groups' min/max counts everywhere and node_count 0.
const MagnumMicroversion = "1.10"

// DefaultPageSize is the page size of Magnum lists when none is given. Magnum's own
// default is its [api] max_limit (1000).
const DefaultPageSize = 100

// Magnum reads clusters, cluster templates and node groups through Magnum's API, for a
// poller that turns Magnum's state into events. It returns Magnum's fields as they are and
// renders nothing.
type Magnum struct {
	client *gophercloud.ServiceClient
}

// NewMagnum finds Magnum (service type container-infra) in the session's catalog.
func NewMagnum(cloud *Cloud) (*Magnum, error) {
	c, err := cloud.ContainerInfra()
	if err != nil {
		return nil, err
	}
	mc := *c
	mc.Microversion = MagnumMicroversion // sent as OpenStack-API-Version: container-infra 1.10
	return &Magnum{client: &mc}, nil
}

// IsNotFound reports whether err is Magnum's (or any OpenStack API's) 404.
func IsNotFound(err error) bool { return gophercloud.ResponseCodeIs(err, 404) }

// ListClusters returns every cluster the credentials may see (all projects' for an admin),
// in Magnum's order (creation), with full details (GET /v1/clusters/detail), reading
// pageSize clusters per request (limit/marker); pageSize <= 0 means DefaultPageSize.
func (m *Magnum) ListClusters(ctx context.Context, pageSize int) ([]Cluster, error) {
	var out []Cluster
	err := clusters.ListDetail(m.client, clusters.ListOpts{Limit: pageLimit(pageSize)}).EachPage(ctx,
		func(_ context.Context, p pagination.Page) (bool, error) {
			cs, err := clusters.ExtractClusters(p)
			if err != nil {
				return false, err
			}
			for i := range cs {
				out = append(out, clusterFrom(&cs[i]))
			}
			return true, nil
		})
	if err != nil {
		return nil, fmt.Errorf("magnum: listing clusters: %w", err)
	}
	return out, nil
}

// GetCluster returns one cluster by uuid or name; IsNotFound tells a deleted one.
func (m *Magnum) GetCluster(ctx context.Context, id string) (*Cluster, error) {
	c, err := clusters.Get(ctx, m.client, id).Extract()
	if err != nil {
		return nil, fmt.Errorf("magnum: getting cluster %s: %w", id, err)
	}
	out := clusterFrom(c)
	return &out, nil
}

// ListClusterTemplates returns every cluster template the credentials may see, pageSize
// per request; Magnum's template list carries every field.
func (m *Magnum) ListClusterTemplates(ctx context.Context, pageSize int) ([]ClusterTemplate, error) {
	var out []ClusterTemplate
	err := clustertemplates.List(m.client, clustertemplates.ListOpts{Limit: pageLimit(pageSize)}).EachPage(ctx,
		func(_ context.Context, p pagination.Page) (bool, error) {
			ts, err := clustertemplates.ExtractClusterTemplates(p)
			if err != nil {
				return false, err
			}
			// gophercloud does not read the template's driver (Magnum 2024.1 and newer).
			var drivers struct {
				Templates []templateDriver `json:"clustertemplates"`
			}
			if err := p.(clustertemplates.ClusterTemplatePage).ExtractInto(&drivers); err != nil {
				return false, err
			}
			for i := range ts {
				t := templateFrom(&ts[i])
				if i < len(drivers.Templates) && drivers.Templates[i].UUID == t.UUID {
					t.Driver = drivers.Templates[i].Driver
				}
				out = append(out, t)
			}
			return true, nil
		})
	if err != nil {
		return nil, fmt.Errorf("magnum: listing cluster templates: %w", err)
	}
	return out, nil
}

// GetClusterTemplate returns one cluster template by uuid or name.
func (m *Magnum) GetClusterTemplate(ctx context.Context, id string) (*ClusterTemplate, error) {
	res := clustertemplates.Get(ctx, m.client, id)
	t, err := res.Extract()
	if err != nil {
		return nil, fmt.Errorf("magnum: getting cluster template %s: %w", id, err)
	}
	out := templateFrom(t)
	var d templateDriver
	if err := res.ExtractInto(&d); err != nil {
		return nil, fmt.Errorf("magnum: getting cluster template %s: %w", id, err)
	}
	out.Driver = d.Driver
	return &out, nil
}

// templateDriver is the part of a template document gophercloud does not read.
type templateDriver struct {
	UUID   string `json:"uuid"`
	Driver string `json:"driver"`
}

// ListNodeGroups returns a cluster's node groups in Magnum's order (creation), which
// decides the order of the chart's nodeGroups. Magnum's list shows only a summary (no
// labels, no min/max counts, no status reason), so each group is then read in full: one
// request per group.
func (m *Magnum) ListNodeGroups(ctx context.Context, clusterID string) ([]NodeGroup, error) {
	var summary []nodegroups.NodeGroup
	err := nodegroups.List(m.client, clusterID, nodegroups.ListOpts{Limit: DefaultPageSize}).EachPage(ctx,
		func(_ context.Context, p pagination.Page) (bool, error) {
			ngs, err := nodegroups.ExtractNodeGroups(p)
			summary = append(summary, ngs...)
			return err == nil, err
		})
	if err != nil {
		return nil, fmt.Errorf("magnum: listing node groups of cluster %s: %w", clusterID, err)
	}
	out := make([]NodeGroup, 0, len(summary))
	for _, s := range summary {
		ng, err := nodegroups.Get(ctx, m.client, clusterID, s.UUID).Extract()
		if err != nil {
			return nil, fmt.Errorf("magnum: getting node group %s of cluster %s: %w", s.UUID, clusterID, err)
		}
		out = append(out, nodeGroupFrom(ng))
	}
	return out, nil
}

func pageLimit(n int) int {
	if n <= 0 {
		return DefaultPageSize
	}
	return n
}

// timeString formats Magnum's timestamps for events; zero (never updated) is "".
func timeString(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}
