package reconciler

import (
	"context"
	"path"
	"runtime"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/magnum-gitops/magnum-gitops/gitrepo"
)

// TrailerResync marks a commit made by resync rather than by an event.
const TrailerResync = "Magnum-Resync"

// ResyncPlans renders every cluster of the repository again from its record and returns
// the plans that would change something: after an upgrade of magnum-gitops, one
// reviewable change per cluster whose output moved. Secrets are not in the records, so
// they are never re-encrypted; the cluster directories keep listing them. progress, when
// set, is called after each cluster with the count done and the total, by one goroutine
// at a time (clusters are rendered in parallel).
func (p *Pipeline) ResyncPlans(ctx context.Context, repo FileLister, progress func(done, total int)) ([]*Plan, error) {
	// Every cluster is read from one commit: the branch moves while resync renders (events
	// land), and a record read at one head with a plan diffed at another would let an old
	// event pass for the current one.
	if r, ok := repo.(interface {
		Snapshot() (*gitrepo.Snapshot, error)
	}); ok {
		snap, err := r.Snapshot()
		if err != nil {
			return nil, stepError("read", err)
		}
		repo = snap
	}
	files, err := repo.ListFiles(p.Config.Flux.Path)
	if err != nil {
		return nil, stepError("read", err)
	}
	var records []string
	for _, f := range files {
		if path.Base(f) == RecordFile {
			records = append(records, f)
		}
	}
	// Clusters are independent: render them on every CPU, keep the plans in record order.
	plans := make([]*Plan, len(records))
	var (
		mu   sync.Mutex // progress is called by one goroutine at a time
		done int
	)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, f := range records {
		g.Go(func() error {
			if err := gctx.Err(); err != nil {
				return err
			}
			pl, err := p.resyncOne(gctx, repo, f)
			if err != nil {
				return err
			}
			plans[i] = pl
			if progress != nil {
				mu.Lock()
				done++
				progress(done, len(records))
				mu.Unlock()
			}
			return nil
		})
	}
	err = g.Wait()
	var out []*Plan
	for _, pl := range plans {
		if pl != nil {
			out = append(out, pl)
		}
	}
	return out, err
}

// resyncOne renders one record again and returns its plan, or nil when nothing changes.
func (p *Pipeline) resyncOne(ctx context.Context, repo FileLister, f string) (*Plan, error) {
	data, ok, err := repo.ReadFile(f)
	if err != nil {
		return nil, stepError("read", err)
	}
	if !ok {
		return nil, nil
	}
	ev, err := ReadRecord(data)
	if err != nil {
		return nil, stepError("read", err)
	}
	res, err := p.Render(ctx, ev)
	if err != nil {
		return nil, err
	}
	pl, err := p.Plan(ev, res, repo)
	if err != nil || pl.NoOp() {
		return nil, err
	}
	pl.record = data
	asResync(pl)
	return pl, nil
}

// asResync rewrites a plan's message: it is the generator that changed, not the cluster.
// The event's id and digest are left out so that they stay the original event's.
func asResync(pl *Plan) {
	r := pl.Result
	pl.Commit.Subject = "magnum-gitops: resync cluster " + r.ClusterName + " (" + r.ReleaseName + ") in project " + r.ProjectID
	pl.Commit.Body = "Rendered again from " + RecordFile + " by the current magnum-gitops; the cluster itself did not change.\n\n" + pl.Commit.Body
	var kept []gitrepo.Trailer
	for _, t := range pl.Commit.Trailers {
		if t.Key != TrailerEventID && t.Key != TrailerEventDigest {
			kept = append(kept, t)
		}
	}
	pl.Commit.Trailers = append(kept, gitrepo.Trailer{Key: TrailerResync, Value: "true"})
}
