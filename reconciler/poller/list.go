package poller

import (
	"context"
	"errors"
	"fmt"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/reconciler/internal/magnumdiff"
	"github.com/magnum-gitops/magnum-gitops/reconciler/openstack"
)

// magnumState is a cluster as Magnum's API shows it, in the shape events carry it.
func magnumState(c openstack.Cluster, t openstack.ClusterTemplate, groups []openstack.NodeGroup) magnumdiff.State {
	s := magnumdiff.State{Cluster: c.Event(), Template: t.Event()}
	for _, g := range groups {
		s.NodeGroups = append(s.NodeGroups, g.Event())
	}
	return s
}

// MagnumCluster is one cluster of a selected template as Magnum holds it now (Poller.List).
type MagnumCluster struct {
	UUID, Name string
	Status     v1alpha1.ClusterStatus
	// Event is the cluster as one update_cluster event: what a pass would compare Git
	// with, without Secret material or resolved facts. Nil when Err is set.
	Event *v1alpha1.ClusterEvent
	// Err says why the cluster could not be read whole (its node groups, its template).
	Err error
}

// List reads the clusters of the templates Select picks, as Magnum holds them now, without
// comparing them with Git or submitting anything: the clusters `migrate --source magnum`
// adopts. Clusters Magnum is deleting are left out. Only Magnum, Select, AuthURL and
// PageSize are used. A cluster that cannot be read whole is listed with its error; a list
// that cannot be read at all is the error.
func (p *Poller) List(ctx context.Context) ([]MagnumCluster, error) {
	if p.Magnum == nil || p.Select == nil {
		return nil, errors.New("reconciler: listing Magnum's clusters needs Magnum and Select")
	}
	clusters, err := p.Magnum.ListClusters(ctx, p.PageSize)
	if err != nil {
		return nil, fmt.Errorf("listing clusters: %w", err)
	}
	list, err := p.Magnum.ListClusterTemplates(ctx, p.PageSize)
	if err != nil {
		return nil, fmt.Errorf("listing cluster templates: %w", err)
	}
	templates := make(map[string]openstack.ClusterTemplate, len(list))
	for _, t := range list {
		templates[t.UUID] = t
	}
	var out []MagnumCluster
	for _, c := range clusters {
		status := v1alpha1.ClusterStatus(c.Status)
		if magnumdiff.Deleting(status) {
			continue
		}
		mc := MagnumCluster{UUID: c.UUID, Name: c.Name, Status: status}
		tmpl, err := p.template(ctx, c.ClusterTemplateID, templates)
		switch {
		case openstack.IsNotFound(err):
			continue // a template we may not see cannot be one we select
		case err != nil:
			mc.Err = fmt.Errorf("cluster template %s: %w", c.ClusterTemplateID, err)
			out = append(out, mc)
			continue
		case !p.Select(tmpl):
			continue
		}
		groups, err := p.Magnum.ListNodeGroups(ctx, c.UUID)
		if err != nil {
			mc.Err = fmt.Errorf("node groups: %w", err)
			out = append(out, mc)
			continue
		}
		s := magnumState(c, tmpl, groups)
		s.ImplicitGroups()
		mc.Event = magnumdiff.Event(nil, magnumdiff.Step{Op: v1alpha1.UpdateCluster, State: s}, p.AuthURL)
		out = append(out, mc)
	}
	return out, nil
}
