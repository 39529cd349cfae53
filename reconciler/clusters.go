package reconciler

import (
	"cmp"
	"path"
	"slices"
	"sync"
	"time"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/gitrepo"
	"github.com/magnum-gitops/magnum-gitops/magnum"
	"github.com/magnum-gitops/magnum-gitops/reconciler/internal/compact"
)

// ClusterRecord is what the service knows of a cluster: the last event applied to it and
// the commit that carries it.
type ClusterRecord struct {
	// Event is the last event, without Secret material.
	Event *v1alpha1.ClusterEvent
	// StackID and Namespace locate the cluster's objects.
	StackID   string
	Namespace string
	// Root is the repository directory of its management cluster (generator.Result.Root).
	Root string
	// Revision is the commit that carries the event; empty when it changed nothing.
	Revision string
	// At is when the event was applied (or, after a restart, when it was read back).
	At time.Time
	// PullRequest is the web address of the pull request that carries the event in review
	// mode, until Flux applies it; empty otherwise, and after a restart.
	PullRequest string
	// Superseded are the pull requests of the cluster's earlier events that this one
	// replaced (the last few): serve closes those still open.
	Superseded []string
}

// maxSuperseded bounds ClusterRecord.Superseded: a cluster's events come one at a time.
const maxSuperseded = 8

// Clusters indexes the last event of every cluster by Magnum UUID.
type Clusters struct {
	mu sync.RWMutex
	m  map[string]ClusterRecord
	// gone keeps the clusters whose delete completed, so that a Magnum that missed the
	// moment (a conductor down) still learns DELETE_COMPLETE instead of an unknown cluster.
	gone map[string]ClusterRecord
	// goneIn is, per tombstone, a commit in which the cluster's directory is gone: a
	// snapshot whose head does not contain it predates the completion (see follower).
	goneIn map[string]string
	// compact makes the copies of events records keep.
	compact *compact.Compactor
}

// tombstoneTTL is how long a completed delete stays answerable.
const tombstoneTTL = 7 * 24 * time.Hour

// newClusters returns an empty index.
func newClusters() *Clusters {
	return &Clusters{m: map[string]ClusterRecord{}, gone: map[string]ClusterRecord{}, goneIn: map[string]string{},
		compact: compact.New()}
}

// Observe records an applied event. The stored event is a compacted copy, without Secret
// material.
func (c *Clusters) Observe(ev *v1alpha1.ClusterEvent, s Summary, at time.Time) {
	rec := ClusterRecord{Event: c.compact.Event(ev), StackID: s.StackID, Namespace: s.Namespace, Root: s.Root, Revision: s.Revision, At: at,
		PullRequest: s.PullRequestURL}
	c.mu.Lock()
	defer c.mu.Unlock()
	old, had := c.m[ev.Cluster.UUID]
	switch {
	case had && old.Event.ID == ev.ID:
		rec.Superseded = old.Superseded
		if rec.Revision == "" {
			rec.Revision = old.Revision // a replay keeps the commit that carried it
			rec.PullRequest = cmp.Or(rec.PullRequest, old.PullRequest)
		}
	case had:
		rec.Superseded = old.Superseded
		if old.PullRequest != "" && old.PullRequest != rec.PullRequest {
			rec.Superseded = append(slices.Clone(old.Superseded), old.PullRequest)
			rec.Superseded = rec.Superseded[max(0, len(rec.Superseded)-maxSuperseded):]
		}
	}
	if rec.Root == "" {
		rec.Root = old.Root
	}
	c.m[ev.Cluster.UUID] = rec
	c.unbury(ev.Cluster.UUID)
}

// stepped records that a commit of the reconciler's own (an upgrade chain's next step)
// now carries the cluster's last event: its status waits for that commit, from at.
func (c *Clusters) stepped(uuid, revision string, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if rec, ok := c.m[uuid]; ok {
		rec.Revision, rec.At = revision, at
		c.m[uuid] = rec
	}
}

// replace sets a cluster's record as read from Git at head (nil: its delete completed, at
// at), unless it changed since it was old (nil: absent): the Reconciler indexed a newer event.
func (c *Clusters) replace(uuid string, old *v1alpha1.ClusterEvent, rec *ClusterRecord, at time.Time, head string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur := c.m[uuid]; cur.Event != old {
		return
	}
	if rec == nil {
		c.forget(uuid, at, head)
		return
	}
	c.m[uuid] = *rec
	c.unbury(uuid)
}

// Forget drops a cluster whose delete completed, keeping a tombstone for tombstoneTTL;
// head is a commit of the branch in which the cluster's directory is gone.
func (c *Clusters) Forget(uuid string, at time.Time, head string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.forget(uuid, at, head)
}

func (c *Clusters) forget(uuid string, at time.Time, head string) {
	if rec, ok := c.m[uuid]; ok {
		rec.At = at
		c.gone[uuid] = rec
		c.goneIn[uuid] = head
	}
	delete(c.m, uuid)
	for id, rec := range c.gone {
		if at.Sub(rec.At) > tombstoneTTL {
			c.unbury(id)
		}
	}
}

// unbury drops a tombstone. c.mu is held.
func (c *Clusters) unbury(uuid string) {
	delete(c.gone, uuid)
	delete(c.goneIn, uuid)
}

// completedIn returns the commit recorded with a cluster's tombstone.
func (c *Clusters) completedIn(uuid string) (string, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if _, ok := c.gone[uuid]; !ok {
		return "", false
	}
	return c.goneIn[uuid], true
}

// Gone returns the record of a cluster whose delete completed.
func (c *Clusters) Gone(uuid string) (ClusterRecord, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	r, ok := c.gone[uuid]
	return r, ok
}

// Get returns a cluster's record.
func (c *Clusters) Get(uuid string) (ClusterRecord, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	r, ok := c.m[uuid]
	return r, ok
}

// All returns every record, ordered by namespace and stack id.
func (c *Clusters) All() []ClusterRecord {
	c.mu.RLock()
	out := make([]ClusterRecord, 0, len(c.m))
	for _, r := range c.m {
		out = append(out, r)
	}
	c.mu.RUnlock()
	slices.SortFunc(out, func(a, b ClusterRecord) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.StackID, b.StackID))
	})
	return out
}

// Len counts the clusters.
func (c *Clusters) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.m)
}

// LoadClusters rebuilds the index from the records in a repository: the state after a
// restart, with no event lost that Git holds. A record that does not decode is skipped and
// returned in bad, so that one corrupt file does not stop the service.
func LoadClusters(repo gitrepo.Tree, site *generator.Site, at time.Time) (*Clusters, []string, error) {
	cfg := &site.Config
	c := newClusters()
	var bad []string
	for _, root := range cfg.Roots() {
		files, err := repo.ListFiles(root)
		if err != nil {
			return nil, nil, err
		}
		if bad, err = c.load(repo, cfg, root, files, bad, at); err != nil {
			return nil, nil, err
		}
	}
	return c, bad, nil
}

// load indexes the records among the files of one root.
func (c *Clusters) load(repo gitrepo.Tree, cfg *generator.Config, root string, files, bad []string, at time.Time) ([]string, error) {
	for _, f := range files {
		if path.Base(f) != recordFile {
			continue
		}
		data, ok, err := repo.ReadFile(f)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		ev, err := readRecord(data)
		if err != nil {
			bad = append(bad, f)
			continue
		}
		stackID := ev.Cluster.StackID
		if stackID == "" {
			stackID = magnum.GenerateReleaseName(ev.Cluster.Name, ev.Cluster.UUID)
		}
		c.unbury(ev.Cluster.UUID)
		c.m[ev.Cluster.UUID] = ClusterRecord{Event: c.compact.Event(ev), StackID: stackID,
			Namespace: magnum.Namespace(cfg.Magnum.CapiHelm.NamespacePrefix, ev.Cluster.ProjectID), Root: root, At: at}
	}
	return bad, nil
}

// fillRevisions sets the commit of every record whose revision is unknown (after a
// restart) from the ledger.
func (c *Clusters) fillRevisions(l *ledger) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for uuid, rec := range c.m {
		if rec.Revision == "" && rec.Event.ID != "" {
			rec.Revision = l.Revision(rec.Event.ID)
			c.m[uuid] = rec
		}
	}
}
