package reconciler

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"path"
	"runtime"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/magnum-gitops/magnum-gitops/generator"
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
	// A cluster directory a resync of these settings found settled before, and whose tree
	// has not changed since, renders to nothing again: its record is neither read nor
	// rendered (Gate.settled). The resolvers only fill what a record lacks, and records
	// are written resolved, so the tree and the settings decide the plan.
	hashes, settings, err := p.settledGate(repo)
	if err != nil {
		return nil, err
	}
	records, err := p.records(repo, hashes)
	if err != nil {
		return nil, err
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
			pl, err := p.resyncOne(gctx, repo, f, hashes, settings)
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

// records lists the record files under the Flux path: from hashes when the gate walked
// the tree already (in path order), else by listing it (in Git's tree order).
func (p *Pipeline) records(repo FileLister, hashes map[string]string) ([]string, error) {
	var records []string
	if hashes != nil {
		for f := range hashes {
			if path.Base(f) == RecordFile {
				records = append(records, f)
			}
		}
		slices.Sort(records)
		return records, nil
	}
	files, err := repo.ListFiles(p.Config.Flux.Path)
	if err != nil {
		return nil, stepError("read", err)
	}
	for _, f := range files {
		if path.Base(f) == RecordFile {
			records = append(records, f)
		}
	}
	return records, nil
}

// settledGate returns the hash of every path under the Flux path and the digest of p's
// settings, when p has a Gate and repo can hash its paths; nil hashes otherwise.
func (p *Pipeline) settledGate(repo FileLister) (map[string]string, [sha256.Size]byte, error) {
	h, ok := repo.(interface {
		Hashes(dir string) (map[string]string, error)
	})
	if p.Gate == nil || !ok {
		return nil, [sha256.Size]byte{}, nil
	}
	cfg, err := json.Marshal(p.Config)
	if err != nil {
		return nil, [sha256.Size]byte{}, nil // settings it cannot digest: no gate
	}
	hashes, err := h.Hashes(p.Config.Flux.Path)
	if err != nil {
		return nil, [sha256.Size]byte{}, stepError("read", err)
	}
	return hashes, sha256.Sum256(cfg), nil
}

// resyncOne renders one record again and returns its plan, or nil when nothing changes.
// With hashes (settledGate), a directory settled before is skipped unread.
func (p *Pipeline) resyncOne(ctx context.Context, repo FileLister, f string, hashes map[string]string, settings [sha256.Size]byte) (*Plan, error) {
	dir := path.Dir(f)
	var key [sha256.Size]byte
	if hashes != nil {
		if key = settledKey(settings, hashes[dir]); p.Gate.isSettled(key, hashes) {
			return nil, nil
		}
	}
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
	if err != nil {
		return nil, err
	}
	if pl.NoOp() {
		if hashes != nil {
			p.Gate.settle(key, outside(pl.Files, dir, hashes))
		}
		return nil, nil
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

// outside lists the paths a plan covers outside the cluster directory dir (the
// namespace's file, the chart source), with what the tree holds there.
func outside(fs *generator.FileSet, dir string, hashes map[string]string) []pathHash {
	var out []pathHash
	add := func(p string) {
		if !strings.HasPrefix(p, dir+"/") {
			out = append(out, pathHash{p, hashes[p]})
		}
	}
	for p := range fs.Files {
		add(p)
	}
	for _, p := range fs.Deletes {
		add(p)
	}
	return out
}
