package reconciler

import (
	"cmp"
	"path"
	"slices"
	"sync"
	"time"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/magnum"
)

// ClusterRecord is what the service knows of a cluster: the last event applied to it and
// the commit that carries it.
type ClusterRecord struct {
	// Event is the last event, without Secret material.
	Event *v1alpha1.ClusterEvent
	// StackID and Namespace locate the cluster's objects.
	StackID   string
	Namespace string
	// Revision is the commit that carries the event; empty when it changed nothing.
	Revision string
	// At is when the event was applied (or, after a restart, when it was read back).
	At time.Time
}

// Clusters indexes the last event of every cluster by Magnum UUID.
type Clusters struct {
	mu sync.RWMutex
	m  map[string]ClusterRecord
	// gone keeps the clusters whose delete completed, so that a Magnum that missed the
	// moment (a conductor down) still learns DELETE_COMPLETE instead of an unknown cluster.
	gone map[string]ClusterRecord
}

// TombstoneTTL is how long a completed delete stays answerable.
const TombstoneTTL = 7 * 24 * time.Hour

// NewClusters returns an empty index.
func NewClusters() *Clusters {
	return &Clusters{m: map[string]ClusterRecord{}, gone: map[string]ClusterRecord{}}
}

// Observe records an applied event. The stored event carries no Secret material.
func (c *Clusters) Observe(ev *v1alpha1.ClusterEvent, s Summary, at time.Time) {
	e := *ev
	e.Secrets = nil
	rec := ClusterRecord{Event: &e, StackID: s.StackID, Namespace: s.Namespace, Revision: s.Revision, At: at}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.m[ev.Cluster.UUID]; ok && rec.Revision == "" && old.Event.ID == ev.ID {
		rec.Revision = old.Revision // a replay keeps the commit that carried it
	}
	c.m[ev.Cluster.UUID] = rec
	delete(c.gone, ev.Cluster.UUID)
}

// replace sets a cluster's record as read from Git (nil: its delete completed, at at),
// unless it changed since it was old (nil: absent): the queue indexed a newer event. A
// cluster whose delete completed is not brought back: the snapshot the record was read
// from predates the completion (Magnum never reuses a UUID; only an applied event, through
// Observe, lifts a tombstone).
func (c *Clusters) replace(uuid string, old *v1alpha1.ClusterEvent, rec *ClusterRecord, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur := c.m[uuid]; cur.Event != old {
		return
	}
	if _, gone := c.gone[uuid]; gone && old == nil && rec != nil {
		return
	}
	if rec == nil {
		c.forget(uuid, at)
		return
	}
	c.m[uuid] = *rec
	delete(c.gone, uuid)
}

// Forget drops a cluster whose delete completed, keeping a tombstone for TombstoneTTL.
func (c *Clusters) Forget(uuid string, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.forget(uuid, at)
}

func (c *Clusters) forget(uuid string, at time.Time) {
	if rec, ok := c.m[uuid]; ok {
		rec.At = at
		c.gone[uuid] = rec
	}
	delete(c.m, uuid)
	for id, rec := range c.gone {
		if at.Sub(rec.At) > TombstoneTTL {
			delete(c.gone, id)
		}
	}
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

// FileLister lists every file under a directory of a repository (gitrepo.Repo does).
type FileLister interface {
	Tree
	ListFiles(dir string) ([]string, error)
}

// LoadClusters rebuilds the index from the records in a repository: the state after a
// restart, with no event lost that Git holds. A record that does not decode is skipped and
// returned in bad, so that one corrupt file does not stop the service.
func LoadClusters(repo FileLister, cfg *generator.Config, at time.Time) (*Clusters, []string, error) {
	files, err := repo.ListFiles(cfg.Flux.Path)
	if err != nil {
		return nil, nil, err
	}
	c := NewClusters()
	var bad []string
	for _, f := range files {
		if path.Base(f) != RecordFile {
			continue
		}
		data, ok, err := repo.ReadFile(f)
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			continue
		}
		ev, err := ReadRecord(data)
		if err != nil {
			bad = append(bad, f)
			continue
		}
		stackID := ev.Cluster.StackID
		if stackID == "" {
			stackID = magnum.GenerateReleaseName(ev.Cluster.Name, ev.Cluster.UUID)
		}
		delete(c.gone, ev.Cluster.UUID)
		c.m[ev.Cluster.UUID] = ClusterRecord{Event: ev, StackID: stackID,
			Namespace: magnum.Namespace(cfg.Magnum.CapiHelm.NamespacePrefix, ev.Cluster.ProjectID), At: at}
	}
	return c, bad, nil
}

// FillRevisions sets the commit of every record whose revision is unknown (after a
// restart) from the ledger.
func (c *Clusters) FillRevisions(l *Ledger) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for uuid, rec := range c.m {
		if rec.Revision == "" && rec.Event.ID != "" {
			rec.Revision = l.Revision(rec.Event.ID)
			c.m[uuid] = rec
		}
	}
}
