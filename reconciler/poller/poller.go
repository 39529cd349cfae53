package poller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/reconciler"
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

// Poller is the Magnum source of events (serve --source magnum): it polls Magnum's API for
// the clusters whose template it selects, compares each with the last event Git holds for
// it (Clusters, rebuilt from the records in Git after a restart) and submits the driver
// calls that would have produced the difference (see diffCluster): create, resize, node
// group create/update/delete, upgrade, update and delete. It is level-triggered: a pass
// derives everything from Magnum and Git alone, so a restart neither misses nor repeats
// anything, and the ids of its events are derived from the state that caused them (the
// same difference always yields the same id, which the reconciler's ledger answers).
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
	// Clusters is the last event per cluster that Git holds; Submit must record into it
	// (the Reconciler does, with Reconciler.Clusters set). The poller records what Submit did not.
	Clusters *reconciler.Clusters
	// Submit commits one event and answers once it is pushed (Reconciler.Submit).
	Submit func(ctx context.Context, ev *v1alpha1.ClusterEvent) reconciler.Summary
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

// Poll runs one pass: every selected cluster is compared with Git and its differences are
// submitted, in order, each answered before the next. A failure stops that cluster's
// events for this pass (the next pass derives them again) and is returned with the others.
func (p *Poller) Poll(ctx context.Context) error {
	if p.Magnum == nil || p.Select == nil || p.Clusters == nil || p.Submit == nil {
		return errors.New("poller: Poller needs Magnum, Select, Clusters and Submit")
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
	listed := make(map[string]bool, len(clusters))
	for _, c := range clusters {
		listed[c.UUID] = true
		if err := p.pollCluster(ctx, c, templates); err != nil {
			errs = append(errs, fmt.Errorf("cluster %s: %w", c.UUID, err))
		}
	}
	errs = append(errs, p.pollGone(ctx, listed, templates)...)
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

// pollCluster compares one listed cluster with Git and submits the difference.
func (p *Poller) pollCluster(ctx context.Context, c openstack.Cluster, templates map[string]openstack.ClusterTemplate) error {
	rec, known := p.Clusters.Get(c.UUID)
	if known && rec.Event.Operation == v1alpha1.DeleteCluster {
		return nil // Git is done with it; Magnum will drop it
	}
	tmpl, err := p.template(ctx, c.ClusterTemplateID, templates)
	if err != nil && !known {
		if openstack.IsNotFound(err) {
			return nil // a template we may not see cannot be one we select
		}
		return err
	}
	managed := (err == nil && p.Select(tmpl)) || (known && p.recordSelected(rec, templates))
	if !managed {
		return nil
	}
	if err != nil {
		return err // ours, but its template cannot be read: nothing to compare with
	}
	if !known && p.inCreateGrace(c) {
		p.log().Debug("magnum poll: a new cluster is being created: left to the driver shim within the create grace",
			"cluster", c.UUID, "created_at", c.CreatedAt, "create_grace", p.createGrace())
		return nil
	}
	var recEv *v1alpha1.ClusterEvent
	if known {
		recEv = rec.Event
	}
	var groups []openstack.NodeGroup
	if !deleting(v1alpha1.ClusterStatus(c.Status)) {
		if groups, err = p.nodeGroups(ctx, c); err != nil {
			return err
		}
	}
	for _, st := range diffCluster(recEv, magnumState(c, tmpl, groups)) {
		if err := p.submit(ctx, c, recEv, st); err != nil {
			return err
		}
	}
	return nil
}

// pollGone deletes, from Git, the managed clusters Magnum no longer has.
func (p *Poller) pollGone(ctx context.Context, listed map[string]bool, templates map[string]openstack.ClusterTemplate) []error {
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
		s := recordState(rec.Event)
		s.Cluster.Status = v1alpha1.DeleteInProgress
		st := step{Op: v1alpha1.DeleteCluster, State: s}
		if err := p.submit(ctx, openstack.Cluster{UUID: uuid}, rec.Event, st); err != nil {
			errs = append(errs, fmt.Errorf("cluster %s: %w", uuid, err))
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
	if t, ok := templates[templateID(rec.Event)]; ok {
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
