package poller

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/reconciler"
	"github.com/magnum-gitops/magnum-gitops/reconciler/internal/magnumdiff"
	"github.com/magnum-gitops/magnum-gitops/reconciler/openstack"
)

// Defaults of a Poller.
const (
	defaultPollInterval = time.Minute
	// defaultNodeGroupsMaxAge bounds how long node groups read for a cluster whose
	// updated_at did not move are reused.
	defaultNodeGroupsMaxAge = 10 * time.Minute
	// defaultCreateGrace is how long a new cluster is left to the driver shim: it posts
	// create_cluster from the conductor seconds after Magnum lists the cluster, so minutes
	// mean the shim is not coming (not installed, or its POST failed for good).
	defaultCreateGrace = 5 * time.Minute
)

// MagnumAPI is what a Poller reads from Magnum; *openstack.Magnum implements it.
type MagnumAPI interface {
	ListClusters(ctx context.Context, pageSize int) ([]openstack.Cluster, error)
	GetCluster(ctx context.Context, id string) (*openstack.Cluster, error)
	ListClusterTemplates(ctx context.Context, pageSize int) ([]openstack.ClusterTemplate, error)
	GetClusterTemplate(ctx context.Context, id string) (*openstack.ClusterTemplate, error)
	ListNodeGroups(ctx context.Context, clusterID string) ([]openstack.NodeGroup, error)
}

// Poller is the Magnum source of desired state (serve --source magnum): it polls Magnum's
// API for the clusters whose template it selects and hands their views to the reconciler
// (Converge), which derives in each cluster's reconcile the driver calls that would have
// produced the difference from the last event Git holds for it: create, resize, node
// group create/update/delete, upgrade, update and delete. It is level-triggered: it
// computes no operation and keeps no state of Git's, so a restart neither misses nor
// repeats anything (the ids of the derived events come from the state that caused them,
// and the reconciler's ledger answers one already committed).
//
// Magnum's API sends no ETag, so a cluster's node groups are read again only when its
// updated_at moved (Magnum saves the cluster on every resize and node group operation) or
// after NodeGroupsMaxAge.
//
// The poller acts without the requesting user: it holds no user token and no Magnum CA.
// Its events carry no certificates, so Cluster API generates the cluster's CA (Magnum's
// own CA, and the kubeconfig `openstack coe cluster config` writes from it, do not match
// the cluster). A created cluster's application credential comes from Credentials, which
// runs with the service's own credentials: it belongs to the service's user and project,
// not to the cluster's owner, so the cluster's OpenStack resources are made with the
// service's identity. Where that matters, send events through the event API (the driver
// shim resolves in the user's scope) and poll only as a safety net. For that, a cluster
// Magnum is still creating is left to the shim for CreateGrace after its created_at:
// otherwise a pass landing between Magnum listing the cluster and the shim's POST would
// commit the create first, with the service's identity and a CA of Cluster API's, and make
// an application credential nobody uses.
type Poller struct {
	// Magnum reads clusters, templates and node groups.
	Magnum MagnumAPI
	// Select picks the clusters this service manages by their template (see
	// SelectTemplates). A cluster Git already holds stays managed while its recorded
	// template is selected, so an upgrade to an unselected template is still followed.
	Select func(openstack.ClusterTemplate) bool
	// Clusters is the last event per cluster that Git holds (the Reconciler's): what tells
	// a cluster Git holds from a new one, and the managed clusters Magnum no longer has.
	Clusters *reconciler.Clusters
	// Converge hands over Magnum's views and answers, per view, the events the reconcile
	// derived from it once they are pushed (Reconciler.Converge).
	Converge func(ctx context.Context, views []reconciler.MagnumView) [][]reconciler.Summary
	// Credentials, when set, makes the application credential of a cluster Git has never
	// held (created once per cluster and reused until the create is committed; a crash in
	// between leaves it unused in Keystone, named magnum-<uuid>-…).
	Credentials func(ctx context.Context, c openstack.Cluster) (*v1alpha1.ApplicationCredential, error)
	// AuthURL is the public identity endpoint written into events' context (read by
	// k8s-keystone-auth) when the record Git holds names none.
	AuthURL string
	// AllProjects says the credentials see every project's clusters (Magnum lists all
	// projects to admins only). Only then does a cluster missing from the list, and not
	// found by id either, become a delete_cluster: otherwise it may only be invisible.
	AllProjects bool
	// Interval is the time between passes (defaultPollInterval when zero); PageSize the
	// clusters and templates read per request (openstack.DefaultPageSize when zero).
	Interval time.Duration
	PageSize int
	// NodeGroupsMaxAge bounds the reuse of node groups (defaultNodeGroupsMaxAge when zero).
	NodeGroupsMaxAge time.Duration
	// CreateGrace is how long after its created_at a cluster Git has never held, while
	// Magnum shows it CREATE_IN_PROGRESS, is left for the driver shim's create_cluster
	// (defaultCreateGrace when zero; negative: none, the poller creates it at once). A
	// cluster without created_at, or in any other status, is created at once: only the
	// moment the shim is about to post is waited out.
	CreateGrace time.Duration
	// Log receives one line per event and per failure; slog.Default when nil.
	Log *slog.Logger
	// Now is the clock; time.Now when nil.
	Now func() time.Time

	pass  sync.Mutex // one pass at a time
	seen  map[string]seenGroups
	creds map[string]*v1alpha1.ApplicationCredential
}

// seenGroups are a cluster's node groups as read at its updated_at.
type seenGroups struct {
	updatedAt time.Time
	readAt    time.Time
	groups    []openstack.NodeGroup
}

// Run polls every Interval until ctx ends, starting at once. Failures are logged and the
// next pass tries again.
func (p *Poller) Run(ctx context.Context) {
	t := time.NewTicker(p.interval())
	defer t.Stop()
	for {
		if err := p.Poll(ctx); err != nil && ctx.Err() == nil {
			p.log().Warn("magnum poll", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Poll runs one pass: it reads Magnum's view of every selected cluster (and, with
// AllProjects, finds the managed clusters Magnum no longer has) and hands the views to
// Converge together; the reconciler derives what Git lacks of each. A cluster whose view
// cannot be read is left for the next pass; its error is returned with the others, and
// those of the events the views derived.
func (p *Poller) Poll(ctx context.Context) error {
	if p.Magnum == nil || p.Select == nil || p.Clusters == nil || p.Converge == nil {
		return errors.New("poller: Poller needs Magnum, Select, Clusters and Converge")
	}
	p.pass.Lock()
	defer p.pass.Unlock()
	if p.seen == nil {
		p.seen, p.creds = map[string]seenGroups{}, map[string]*v1alpha1.ApplicationCredential{}
	}
	clusters, err := p.Magnum.ListClusters(ctx, p.PageSize)
	if err != nil {
		return err
	}
	list, err := p.Magnum.ListClusterTemplates(ctx, p.PageSize)
	if err != nil {
		return err
	}
	templates := make(map[string]openstack.ClusterTemplate, len(list))
	for _, t := range list {
		templates[t.UUID] = t
	}
	var errs []error
	var views []reconciler.MagnumView
	listed := make(map[string]bool, len(clusters))
	for _, c := range clusters {
		listed[c.UUID] = true
		v, ok, err := p.view(ctx, c, templates)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("cluster %s: %w", c.UUID, err))
		case ok:
			views = append(views, v)
		}
	}
	gone, goneErrs := p.gone(ctx, listed, templates)
	views, errs = append(views, gone...), append(errs, goneErrs...)
	if len(views) > 0 {
		errs = append(errs, p.converge(ctx, views)...)
	}
	for uuid := range p.seen {
		if !listed[uuid] {
			delete(p.seen, uuid)
		}
	}
	for uuid, cred := range p.creds {
		if !listed[uuid] {
			p.log().Warn("magnum poll: a cluster left Magnum before its create was committed: its application credential is unused",
				"cluster", uuid, "application_credential_id", cred.ID)
			delete(p.creds, uuid)
		}
	}
	return errors.Join(errs...)
}

// view reads Magnum's view of one listed cluster; ok is false when the cluster is not
// this service's, or not yet (the create grace), or Git is done with it.
func (p *Poller) view(ctx context.Context, c openstack.Cluster, templates map[string]openstack.ClusterTemplate) (reconciler.MagnumView, bool, error) {
	rec, known := p.Clusters.Get(c.UUID)
	if known && rec.Event.Operation == v1alpha1.DeleteCluster {
		return reconciler.MagnumView{}, false, nil // Git is done with it; Magnum will drop it
	}
	tmpl, err := p.template(ctx, c.ClusterTemplateID, templates)
	if err != nil && !known {
		if openstack.IsNotFound(err) {
			return reconciler.MagnumView{}, false, nil // a template we may not see cannot be one we select
		}
		return reconciler.MagnumView{}, false, err
	}
	managed := (err == nil && p.Select(tmpl)) || (known && p.recordSelected(rec, templates))
	if !managed {
		return reconciler.MagnumView{}, false, nil
	}
	if err != nil {
		return reconciler.MagnumView{}, false, err // ours, but its template cannot be read: nothing to compare with
	}
	if !known && p.inCreateGrace(c) {
		p.log().Debug("magnum poll: a new cluster is being created: left to the driver shim within the create grace",
			"cluster", c.UUID, "created_at", c.CreatedAt, "create_grace", p.createGrace())
		return reconciler.MagnumView{}, false, nil
	}
	var groups []openstack.NodeGroup
	deleting := magnumdiff.Deleting(v1alpha1.ClusterStatus(c.Status))
	if !deleting {
		if groups, err = p.nodeGroups(ctx, c); err != nil {
			return reconciler.MagnumView{}, false, err
		}
	}
	s := magnumState(c, tmpl, groups)
	v := reconciler.MagnumView{Cluster: s.Cluster, Template: s.Template, NodeGroups: s.NodeGroups, AuthURL: p.AuthURL}
	if !known && !deleting && p.Credentials != nil {
		// Git has never held it: its view derives a create_cluster, which carries the
		// cluster's credential (made once, reused until the create is committed).
		cred := p.creds[c.UUID]
		if cred == nil {
			if cred, err = p.Credentials(ctx, c); err != nil {
				return reconciler.MagnumView{}, false, fmt.Errorf("application credential: %w", err)
			}
			p.creds[c.UUID] = cred
		}
		v.Credential = cred
	}
	return v, true, nil
}

// gone are the views of the managed clusters Magnum no longer has.
func (p *Poller) gone(ctx context.Context, listed map[string]bool, templates map[string]openstack.ClusterTemplate) ([]reconciler.MagnumView, []error) {
	var views []reconciler.MagnumView
	var errs []error
	for _, rec := range p.Clusters.All() {
		uuid := rec.Event.Cluster.UUID
		if listed[uuid] || rec.Event.Operation == v1alpha1.DeleteCluster || !p.recordSelected(rec, templates) {
			continue
		}
		if !p.AllProjects {
			p.log().Warn("magnum poll: a managed cluster is not in Magnum's list, and the credentials may not see every project: not deleting it",
				"cluster", uuid, "stack_id", rec.StackID)
			continue
		}
		// The list may have missed a cluster created or renamed during the pass: ask for it.
		if _, err := p.Magnum.GetCluster(ctx, uuid); !openstack.IsNotFound(err) {
			if err != nil {
				errs = append(errs, fmt.Errorf("cluster %s: %w", uuid, err))
			}
			continue
		}
		views = append(views, reconciler.MagnumView{Cluster: v1alpha1.Cluster{UUID: uuid}, Gone: true, AuthURL: p.AuthURL})
	}
	return views, errs
}

// converge hands the views to the reconciler and logs each event they derived.
func (p *Poller) converge(ctx context.Context, views []reconciler.MagnumView) []error {
	var errs []error
	for i, sums := range p.Converge(ctx, views) {
		uuid := views[i].Cluster.UUID
		for _, sum := range sums {
			log := p.log().With("event_id", sum.EventID, "operation", sum.Operation, "cluster", uuid, "outcome", sum.Outcome)
			if sum.Error != "" {
				log.Warn("magnum poll: event failed", "error", sum.Error)
				errs = append(errs, fmt.Errorf("cluster %s: %s %s: %w", uuid, sum.Operation, sum.EventID, cmp.Or(sum.Err(), errors.New(sum.Error))))
				continue
			}
			log.Info("magnum poll: event", "stack_id", sum.StackID, "commit", sum.Revision)
			if sum.Operation == v1alpha1.CreateCluster {
				delete(p.creds, uuid)
			}
		}
	}
	return errs
}

// template returns a cluster's template from this pass's list, else reads it.
func (p *Poller) template(ctx context.Context, id string, templates map[string]openstack.ClusterTemplate) (openstack.ClusterTemplate, error) {
	if t, ok := templates[id]; ok {
		return t, nil
	}
	t, err := p.Magnum.GetClusterTemplate(ctx, id)
	if err != nil {
		return openstack.ClusterTemplate{}, err
	}
	templates[id] = *t
	return *t, nil
}

// recordSelected reports whether the template Git records for a cluster is selected.
func (p *Poller) recordSelected(rec reconciler.ClusterRecord, templates map[string]openstack.ClusterTemplate) bool {
	if t, ok := templates[magnumdiff.TemplateID(rec.Event)]; ok {
		return p.Select(t)
	}
	rt := rec.Event.ClusterTemplate // deleted from Magnum: judged as Git recorded it
	return p.Select(openstack.ClusterTemplate{UUID: rt.UUID, Name: rt.Name, ImageID: rt.ImageID,
		ExternalNetworkID: rt.ExternalNetworkID, NetworkDriver: rt.NetworkDriver, Labels: rt.Labels})
}

// nodeGroups reads a cluster's node groups, or reuses those read at the same updated_at.
func (p *Poller) nodeGroups(ctx context.Context, c openstack.Cluster) ([]openstack.NodeGroup, error) {
	now := p.now()
	maxAge := p.NodeGroupsMaxAge
	if maxAge <= 0 {
		maxAge = defaultNodeGroupsMaxAge
	}
	if s, ok := p.seen[c.UUID]; ok && !c.UpdatedAt.IsZero() && s.updatedAt.Equal(c.UpdatedAt) && now.Sub(s.readAt) < maxAge {
		return s.groups, nil
	}
	groups, err := p.Magnum.ListNodeGroups(ctx, c.UUID)
	if err != nil {
		return nil, err
	}
	p.seen[c.UUID] = seenGroups{updatedAt: c.UpdatedAt, readAt: now, groups: groups}
	return groups, nil
}

// inCreateGrace reports whether c is a cluster the driver shim may still be about to
// create: Magnum shows it CREATE_IN_PROGRESS, created less than the grace ago. A
// created_at ahead of the clock (skew) counts as young.
func (p *Poller) inCreateGrace(c openstack.Cluster) bool {
	grace := p.createGrace()
	if grace < 0 || c.CreatedAt.IsZero() || v1alpha1.ClusterStatus(c.Status) != v1alpha1.CreateInProgress {
		return false
	}
	return p.now().Sub(c.CreatedAt) < grace
}

func (p *Poller) createGrace() time.Duration {
	if p.CreateGrace == 0 {
		return defaultCreateGrace
	}
	return p.CreateGrace
}

func (p *Poller) interval() time.Duration {
	if p.Interval <= 0 {
		return defaultPollInterval
	}
	return p.Interval
}

func (p *Poller) log() *slog.Logger {
	if p.Log == nil {
		return slog.Default()
	}
	return p.Log
}

func (p *Poller) now() time.Time {
	if p.Now == nil {
		return time.Now()
	}
	return p.Now()
}
