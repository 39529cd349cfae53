package reconciler

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"maps"
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

// ResyncOptions says what ResyncPlans hands its plans to.
type ResyncOptions struct {
	// Commit takes the plans that change something, at most Batch at a time, in record
	// order, one batch at a time. The next batch renders while it runs, so that a resync
	// holds at most about three batches of renderings however many clusters move. An
	// error stops the resync.
	Commit func(ctx context.Context, plans []*Plan) error
	// Batch bounds the plans of one Commit call (DefaultMaxGroup when 0): a push's worth.
	Batch int
	// Progress, when set, is called after each Batch of clusters rendered with the count
	// done and the total.
	Progress func(done, total int)
	// Refused, when set, is told of each cluster whose record does not render (the record
	// or what this version makes of it is invalid), which is then left as Git holds it while
	// the resync goes on: one broken record must not hold back the fleet. Without it, such
	// a cluster stops the resync like any other error.
	Refused func(record string, err error)
}

// ResyncPlans renders every cluster of the repository again from its record and hands
// the plans that would change something to o.Commit: after an upgrade of magnum-gitops,
// one reviewable change per cluster whose output moved. Secrets are not in the records,
// so they are never re-encrypted; the cluster directories keep listing them.
func (p *Pipeline) ResyncPlans(ctx context.Context, repo FileLister, o ResyncOptions) error {
	if o.Commit == nil {
		return &Error{Kind: KindInvalid, Step: "resync", Err: errors.New("no Commit to hand the plans to")}
	}
	batch := cmp.Or(o.Batch, DefaultMaxGroup)
	// Every cluster is read from one commit: the branch moves while resync renders (events
	// land), and a record read at one head with a plan diffed at another would let an old
	// event pass for the current one.
	if r, ok := repo.(interface {
		Snapshot() (*gitrepo.Snapshot, error)
	}); ok {
		snap, err := r.Snapshot()
		if err != nil {
			return stepError("read", err)
		}
		repo = snap
	}
	// A cluster directory a resync of these settings found settled before, and whose tree
	// has not changed since, renders to nothing again: its record is neither read nor
	// rendered (Gate.settled). The resolvers only fill what a record lacks, and records
	// are written resolved, so the tree and the settings decide the plan.
	hashes, settings, err := p.settledGate(repo)
	if err != nil {
		return err
	}
	records, err := p.records(repo, hashes)
	if err != nil {
		return err
	}
	// The committer holds one batch, the renderer fills the next and waits to hand it
	// over: an unbuffered channel is what bounds the renderings held.
	batches := make(chan []*Plan)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		for plans := range batches {
			if err := o.Commit(gctx, plans); err != nil {
				return err
			}
		}
		return nil
	})
	g.Go(func() error {
		defer close(batches)
		send := func(plans []*Plan) error {
			select {
			case batches <- plans:
				return nil
			case <-gctx.Done():
				return gctx.Err()
			}
		}
		var pending []*Plan
		for start := 0; start < len(records); start += batch {
			window := records[start:min(start+batch, len(records))]
			plans, err := p.resyncWindow(gctx, repo, window, hashes, settings, o.Refused)
			if err != nil {
				return err
			}
			if o.Progress != nil {
				o.Progress(start+len(window), len(records))
			}
			pending = append(pending, plans...)
			for len(pending) >= batch {
				if err := send(slices.Clone(pending[:batch])); err != nil {
					return err
				}
				pending = slices.Delete(pending, 0, batch)
			}
		}
		if len(pending) > 0 {
			return send(pending)
		}
		return nil
	})
	return g.Wait()
}

// resyncWindow renders the clusters of records side by side, on every CPU, and returns
// the plans that change something, in record order. A cluster that does not render is
// told to refused, when set, and skipped.
func (p *Pipeline) resyncWindow(ctx context.Context, repo FileLister, records []string, hashes map[string]string, settings [sha256.Size]byte, refused func(string, error)) ([]*Plan, error) {
	var mu sync.Mutex // refused is called by one goroutine at a time
	plans := make([]*Plan, len(records))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, f := range records {
		g.Go(func() error {
			if err := gctx.Err(); err != nil {
				return err
			}
			pl, err := p.resyncOne(gctx, repo, f, hashes, settings)
			if err != nil && refused != nil && KindOf(err) == KindInvalid {
				mu.Lock()
				refused(f, err)
				mu.Unlock()
				return nil
			}
			plans[i] = pl
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return slices.DeleteFunc(plans, func(pl *Plan) bool { return pl == nil }), nil
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
	for _, root := range p.Config.Roots() {
		files, err := repo.ListFiles(root)
		if err != nil {
			return nil, stepError("read", err)
		}
		for _, f := range files {
			if path.Base(f) == RecordFile {
				records = append(records, f)
			}
		}
	}
	return records, nil
}

// settledGate returns the hash of every path under the clusters' roots and the digest of p's
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
	var hashes map[string]string
	for _, root := range p.Config.Roots() {
		at, err := h.Hashes(root)
		if err != nil {
			return nil, [sha256.Size]byte{}, stepError("read", err)
		}
		if hashes == nil {
			hashes = at
			continue
		}
		maps.Copy(hashes, at)
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
	if errors.Is(err, ErrUpgradeInProgress) {
		return nil, nil // the upgrade step moves it on (upgrade.go)
	}
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
	pl.Commit.Trailers = append(withoutEvent(pl.Commit.Trailers), gitrepo.Trailer{Key: TrailerResync, Value: "true"})
}

// withoutEvent is a commit's trailers without the event's id and digest, for a commit no
// Magnum event asked for (a resync, an upgrade chain's later step): they stay with the
// commit that answered the event, which a retry of it must find.
func withoutEvent(trailers []gitrepo.Trailer) []gitrepo.Trailer {
	var kept []gitrepo.Trailer
	for _, t := range trailers {
		if t.Key != TrailerEventID && t.Key != TrailerEventDigest {
			kept = append(kept, t)
		}
	}
	return kept
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
