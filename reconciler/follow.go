package reconciler

import (
	"context"
	"errors"
	"path"
	"time"

	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/gitrepo"
	"github.com/magnum-gitops/magnum-gitops/magnum"
)

// ReadHistory reads what the repository's history says of event ids and clusters, once,
// before Start: the ledger of the ids the newest ledgerHistory commits carry, so that after
// a restart a retried id is answered with the commit that carried it and an id reused with
// another body is still refused; the revisions Clusters' records lack (an index loaded from
// the records, LoadClusters, knows no commit); and the head from which CatchUp reads on.
// It returns the number of ids read.
func (r *Reconciler) ReadHistory(ctx context.Context) (int, error) {
	if r.Clusters == nil {
		return 0, errors.New("reconciler: ReadHistory needs Clusters")
	}
	repo := r.Sink.Repo
	l, err := loadLedger(ctx, repo)
	if err != nil {
		return 0, err
	}
	r.Clusters.fillRevisions(l)
	f := &follower{Repo: repo, Config: r.Pipeline.Config, Clusters: r.Clusters, Ledger: l, Now: r.Now}
	if head, err := repo.Head(); err == nil {
		f.Mark(head.String())
	}
	r.ledger, r.follower = l, f
	return l.Len(), nil
}

// CatchUp reads the commits made since the last read (as last fetched or pushed) by the
// other replicas and by people into Clusters and the ledger (follower.CatchUp), so that
// this replica knows their clusters and their event ids. It returns the number of commits
// read; ReadHistory must have been called.
func (r *Reconciler) CatchUp(ctx context.Context) (int, error) {
	if r.follower == nil {
		return 0, errors.New("reconciler: CatchUp before ReadHistory")
	}
	return r.follower.CatchUp(ctx)
}

// follower keeps a replica's cluster index and ledger in step with the commits it did not
// make: those of the other replicas (and of people), which it reads after they are
// fetched. Without it a replica answers 404 for the clusters whose events another
// replica took, its leader never finishes their deletes nor reports their health, and a
// retried event id gets "unchanged" instead of the commit that carried it. It is the
// Reconciler's (ReadHistory, CatchUp), since it reads into the Reconciler's own index and
// ledger: no caller wires it.
type follower struct {
	Repo     *gitrepo.Repo
	Config   *generator.Site
	Clusters *Clusters
	Ledger   *ledger
	// Now stamps the records it reads; time.Now when nil.
	Now func() time.Time

	head string // the last commit read
}

// Mark sets the commit the index was loaded from: CatchUp reads the commits after it.
func (f *follower) Mark(head string) { f.head = head }

// CatchUp reads the commits between the last one read and the branch head (as last
// fetched or pushed), newest first and at most ledgerHistory of them: each event id goes
// to the ledger, and each cluster a commit touched is read again from its record at the
// head, or forgotten when its directory is gone (its delete completed). It returns the
// number of commits read. A record the Reconciler replaced meanwhile is left alone: it is newer.
func (f *follower) CatchUp(ctx context.Context) (int, error) {
	snap, err := f.Repo.Snapshot()
	if err != nil {
		return 0, err
	}
	head := snap.Commit().String()
	if head == f.head || snap.Commit().IsZero() {
		return 0, nil
	}
	type touched struct {
		stackID, project, eventID string
		// event is the newest commit of an event (not a resync, not a delete's later
		// step): the revision of a record whose event has no id.
		event string
	}
	clusters := map[string]touched{}
	read := map[string]bool{} // the commits read: all in head's history
	type learned struct {
		id, digest string
		c          gitrepo.CommitInfo
	}
	var ids []learned // newest first, as read
	n := 0
	err = snap.Walk(ctx, func(c gitrepo.CommitInfo) error {
		if c.Hash.String() == f.head || n >= ledgerHistory {
			return gitrepo.ErrStopWalk
		}
		n++
		read[c.Hash.String()] = true
		id, _ := c.Trailer(trailerEventID)
		if digest, ok := c.Trailer(trailerEventDigest); ok && id != "" {
			ids = append(ids, learned{id, digest, c})
		}
		uuid, ok := c.Trailer(trailerClusterUUID)
		if !ok {
			return nil
		}
		t, seen := clusters[uuid]
		if !seen { // the newest commit of a cluster says where its record is
			t.stackID, _ = c.Trailer(trailerStackID)
			t.project, _ = c.Trailer(trailerProject)
			t.eventID = id
		}
		if t.event == "" && eventCommit(c) {
			t.event = c.Hash.String()
		}
		clusters[uuid] = t
		return nil
	})
	if err != nil {
		return n, err
	}
	// Oldest first, so that the ledger, when full, lets the oldest go first.
	for i := len(ids) - 1; i >= 0; i-- {
		f.Ledger.learn(ids[i].id, ids[i].digest, ids[i].c)
	}
	now := time.Now
	if f.Now != nil {
		now = f.Now
	}
	for uuid, t := range clusters {
		if t.stackID == "" || t.project == "" {
			continue
		}
		old, had := f.Clusters.Get(uuid)
		if had && t.eventID != "" && old.Event.ID == t.eventID {
			continue // this replica's own commit: indexed when it was answered
		}
		if had && old.Revision != "" && f.newer(old.Revision, head, read) {
			continue
		}
		if !had {
			// A cluster whose delete this replica saw complete in a commit head does not
			// contain: the snapshot predates the completion, and its record is the past.
			if in, gone := f.Clusters.completedIn(uuid); gone && (in == "" || f.newer(in, head, read)) {
				continue
			}
		}
		ns := magnum.Namespace(f.Config.Magnum.CapiHelm.NamespacePrefix, t.project)
		data, root, ok, err := readRecordAt(snap, f.Config.Roots(), ns, t.stackID)
		if err != nil {
			return n, err
		}
		var rec *ClusterRecord // nil: the directory is gone, the delete completed
		if ok {
			ev, err := readRecord(data)
			if err != nil {
				continue // LoadClusters reports such a record at start; the next event replaces it
			}
			if had && old.Revision != "" && eventDigest(old.Event) == eventDigest(ev) {
				continue // what is indexed already, with its commit and time
			}
			rev := f.Ledger.Revision(ev.ID)
			if rev == "" && ev.ID == "" {
				rev = t.event
			}
			rec = &ClusterRecord{Event: f.Clusters.compact.Event(ev), StackID: t.stackID, Namespace: ns, Root: root, Revision: rev, At: now()}
		}
		f.Clusters.replace(uuid, old.Event, rec, now(), head)
	}
	f.head = head
	return n, nil
}

// readRecordAt reads a cluster's record from the first root that holds its directory.
func readRecordAt(t gitrepo.Tree, roots []string, namespace, stackID string) (data []byte, root string, ok bool, err error) {
	for _, root := range roots {
		data, ok, err := t.ReadFile(path.Join(generator.ClusterDir(root, namespace, stackID), recordFile))
		if err != nil || ok {
			return data, root, ok, err
		}
	}
	return nil, "", false, nil
}

// newer reports whether rev came after head: it is not in head's history. The commits
// just read (read) are in it. A rev this clone does not hold, or an error, counts as
// newer: the record is left alone. (Under load "newer" is the usual answer; Contains
// numbers a commit that continues the branch past head instead of walking back from head
// through every commit of the clock skew.)
func (f *follower) newer(rev, head string, read map[string]bool) bool {
	if read[rev] {
		return false
	}
	in, err := f.Repo.Contains(head, rev)
	return err != nil || !in
}

// eventCommit reports whether a commit carries an event, rather than a resync or the later
// steps of a delete.
func eventCommit(c gitrepo.CommitInfo) bool {
	if _, ok := c.Trailer(trailerResync); ok {
		return false
	}
	op, _ := c.Trailer(trailerOperation)
	return op != "" && op != operationRemoveSecrets && op != operationDeleteComplete
}
