package service

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/magnum-gitops/magnum-gitops/reconciler"
	"github.com/magnum-gitops/magnum-gitops/status"
)

// judge evaluates clusters from a snapshot of the management cluster that is at most ttl
// old, so a burst of status requests costs one listing of the cache, not one each.
type judge struct {
	src status.Source
	// kinds are what the snapshot lists (status.KindsOf the output format).
	kinds         []schema.GroupVersionKind
	clusters      *reconciler.Clusters
	kustomization string
	// perNamespace is the Flux namespace of the per-namespace layout's Kustomizations
	// (status.Snapshot.PerNamespace); empty in the single layout.
	perNamespace string
	// carries tells whether a revision Flux applied carries a cluster's commit
	// (Service.carries, status.Options.Ancestry).
	carries func(applied string, rec reconciler.ClusterRecord, commit string) bool
	options func(now time.Time) status.Options
	// review is the pull request that carries a cluster's event in review mode.
	review func(ctx context.Context, rec reconciler.ClusterRecord) status.Review
	ttl    time.Duration

	mu    sync.Mutex
	snap  *status.Snapshot
	err   error
	taken time.Time
}

// snapshot returns a fresh enough snapshot.
func (j *judge) snapshot(ctx context.Context) (*status.Snapshot, error) {
	return j.snapshotAfter(ctx, time.Time{})
}

// snapshotAfter returns a fresh enough snapshot taken after t: a decision about an event
// must not rest on what the management cluster looked like before the event arrived.
func (j *judge) snapshotAfter(ctx context.Context, t time.Time) (*status.Snapshot, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.snap != nil && time.Since(j.taken) < j.ttl && j.taken.After(t) {
		return j.snap, j.err
	}
	kinds := j.kinds
	if kinds == nil {
		kinds = status.Kinds
	}
	j.snap, j.err = status.TakeSnapshot(ctx, j.src, kinds)
	if j.snap != nil {
		if j.kustomization != "" {
			j.snap.Kustomization = j.kustomization
		}
		j.snap.PerNamespace = j.perNamespace
	}
	j.taken = time.Now()
	return j.snap, j.err
}

// applied is the revision Flux last applied to a cluster's namespace, from its
// Kustomization, and whether that carries commit (httpapi.Server.Applied).
func (j *judge) applied(rec reconciler.ClusterRecord, commit string) (applied string, includes, known bool) {
	snap, err := j.snapshot(context.Background())
	if err != nil || snap == nil {
		return "", false, false
	}
	return snap.Applied(rec.Namespace, commit, status.Options{Ancestry: j.ancestry(snap, rec, commit)})
}

// ancestry reads from the repository whether the revision Flux last applied to the
// cluster's namespace carries commit, for the judgement to take as data.
func (j *judge) ancestry(snap *status.Snapshot, rec reconciler.ClusterRecord, commit string) status.Ancestry {
	applied, known := snap.LastApplied(rec.Namespace)
	if !known || applied == "" || commit == "" || j.carries == nil {
		return status.Ancestry{}
	}
	return status.Ancestry{Applied: applied, Includes: j.carries(applied, rec, commit)}
}

// evaluate judges one cluster from a snapshot taken after its last event arrived (a
// cached snapshot from before it could say a Cluster being created does not exist, and the
// delete step would remove its Secrets); an unreadable management cluster gives health
// UNKNOWN.
func (j *judge) evaluate(ctx context.Context, rec reconciler.ClusterRecord) status.Report {
	v, o, opts, err := j.judgement(ctx, rec)
	if err != nil {
		return status.Unreadable(v, err)
	}
	return status.Evaluate(v, o, opts)
}

// judgement is what a judgement of one cluster reads: its view, its objects in a snapshot
// taken after its last event arrived, and the options (its deadlines, the ancestry of
// what was applied, its pull request in review mode).
func (j *judge) judgement(ctx context.Context, rec reconciler.ClusterRecord) (status.View, status.Objects, status.Options, error) {
	v := View(rec)
	snap, err := j.snapshotAfter(ctx, rec.At)
	if err != nil {
		return v, status.Objects{}, status.Options{}, err
	}
	opts := status.OptionsFor(rec.Event, j.options(time.Now()))
	opts.Ancestry = j.ancestry(snap, rec, rec.Revision)
	if j.review != nil {
		opts.Review = j.review(ctx, rec)
	}
	return v, snap.Objects(v), opts, nil
}

// leftOver is what the GitOps tool leaves of a cluster that serve deletes
// (status.LeftOver), judged as evaluate judges the cluster; nil when the management
// cluster cannot be read.
func (j *judge) leftOver(ctx context.Context, rec reconciler.ClusterRecord) []status.ObjectRef {
	v, o, opts, err := j.judgement(ctx, rec)
	if err != nil {
		return nil
	}
	return status.LeftOver(v, o, opts)
}

// View is the Magnum view of a cluster as the service knows it: its last event in
// progress since the event arrived (status.NewView), awaiting the commit that carries it.
func View(rec reconciler.ClusterRecord) status.View {
	v := status.NewView(rec.Event, rec.Namespace, rec.StackID, rec.At)
	v.Revision = rec.Revision
	return v
}
