package reconciler

import (
	"bytes"
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

	"github.com/go-git/go-git/v5/plumbing"
	"golang.org/x/sync/errgroup"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/gitrepo"
	"github.com/magnum-gitops/magnum-gitops/reconciler/internal/gate"
)

// trailerResync marks a commit made by resync rather than by an event.
const trailerResync = "Magnum-Resync"

// ResyncOptions says what ResyncRecords hands the clusters it finds to.
type ResyncOptions struct {
	// Queue takes the records of the clusters whose directories may have moved, at most
	// Batch at a time, in record order, InFlight batches at a time: Reconciler.Resync,
	// which renders them again in each cluster's reconcile. The next batch is read while
	// they run, so that a resync holds about InFlight+1 batches of records however many
	// clusters there are. An error stops the resync.
	Queue func(ctx context.Context, records []*ResyncRecord) error
	// Batch bounds the records of one Queue call (100, a Reconciler's default MaxGroup, when
	// 0): a push's worth.
	Batch int
	// InFlight is how many Queue calls may run at once (1 when 0), each with its own
	// batch; more than one needs a Queue safe for concurrent calls.
	InFlight int
	// Progress, when set, is called after each Batch of records read with the count done
	// and the total.
	Progress func(done, total int)
	// Select, when set, keeps the clusters whose record's event it returns true for (one
	// cluster, one project): every record is read, without the gate, and the others are
	// left. nil keeps every cluster.
	Select func(ev *v1alpha1.ClusterEvent) bool
	// Refused, when set, is told of each record that does not decode, which is then left
	// as Git holds it while the resync goes on: one broken record must not hold back the
	// fleet. Without it, such a record stops the resync like any other error. (A record
	// that decodes but does not render is refused by its reconcile, in its Summary.)
	Refused func(record string, err error)
}

// ResyncRecord is a cluster's record as a resync read it: what the cluster's reconcile
// renders again (PlanResync).
type ResyncRecord struct {
	// Path is the record's file, Data its content as read, Event what Data decodes to.
	Path  string
	Data  []byte
	Event *v1alpha1.ClusterEvent
	// read is the resync's read of the repository, for the Gate; nil without a Gate.
	read *resyncRead
}

// resyncRead is one resync's read of the repository: the commit, the hash of every path
// under the clusters' roots there, and the digest of the pipeline's settings.
type resyncRead struct {
	commit   plumbing.Hash
	hashes   map[string]string
	settings [sha256.Size]byte
}

// ResyncRecords is the resync's event source: it reads every cluster's record from one
// commit of the repository and hands those to o.Queue whose directory may have moved since
// a resync of these settings last found it as rendered (Gate.isSettled). It renders
// nothing: each cluster's reconcile renders its record again (PlanResync) and commits what
// moved, one reviewable change per cluster, after an upgrade of magnum-gitops.
func (p *Pipeline) ResyncRecords(ctx context.Context, repo gitrepo.Tree, o ResyncOptions) error {
	if o.Queue == nil {
		return &failure{Kind: KindInvalid, Step: "resync", Err: errors.New("no Queue to hand the records to")}
	}
	batch := cmp.Or(o.Batch, defaultMaxGroup)
	// Every record is read from one commit, and the gate's hashes are that commit's.
	if r, ok := repo.(interface {
		Snapshot() (*gitrepo.Snapshot, error)
	}); ok {
		snap, err := r.Snapshot()
		if err != nil {
			return stepError("read", err)
		}
		repo = snap
	}
	var read *resyncRead
	if o.Select == nil {
		// A selection reads every record (the gate would skip settled ones unread), so
		// that its caller can tell a cluster that rendered as before from one not there.
		var err error
		if read, err = p.readForGate(repo); err != nil {
			return err
		}
	}
	records, err := p.records(repo, read)
	if err != nil {
		return err
	}
	// The queue holds one batch, the reader fills the next and waits to hand it over: an
	// unbuffered channel is what bounds the records held.
	batches := make(chan []*ResyncRecord)
	g, gctx := errgroup.WithContext(ctx)
	for range max(o.InFlight, 1) {
		g.Go(func() error {
			for recs := range batches {
				if err := o.Queue(gctx, recs); err != nil {
					return err
				}
			}
			return nil
		})
	}
	g.Go(func() error {
		defer close(batches)
		send := func(recs []*ResyncRecord) error {
			select {
			case batches <- recs:
				return nil
			case <-gctx.Done():
				return gctx.Err()
			}
		}
		var pending []*ResyncRecord
		for start := 0; start < len(records); start += batch {
			window := records[start:min(start+batch, len(records))]
			recs, err := p.readWindow(gctx, repo, window, read, o.Refused, o.Select)
			if err != nil {
				return err
			}
			if o.Progress != nil {
				o.Progress(start+len(window), len(records))
			}
			pending = append(pending, recs...)
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

// readWindow reads the records of a window and returns those of directories not
// settled whose event sel keeps (nil: all), in record order. A record that does not decode is told to refused, when set,
// and skipped. The files are read one after the other (the object store has one lock),
// and decoded side by side: decoding is most of reading a record.
func (p *Pipeline) readWindow(ctx context.Context, repo gitrepo.Tree, records []string, read *resyncRead, refused func(string, error), sel func(*v1alpha1.ClusterEvent) bool) ([]*ResyncRecord, error) {
	var recs []*ResyncRecord
	for _, f := range records {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		rec, err := p.readData(repo, f, read)
		if err != nil {
			return nil, err
		}
		if rec != nil {
			recs = append(recs, rec)
		}
	}
	errs := make([]error, len(recs))
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, rec := range recs {
		g.Go(func() error {
			rec.Event, errs[i] = readRecord(rec.Data)
			return nil
		})
	}
	_ = g.Wait()
	kept := recs[:0]
	for i, rec := range recs {
		switch err := stepError("read", errs[i]); {
		case err != nil && refused != nil && kindOf(err) == KindInvalid:
			refused(rec.Path, err)
		case err != nil:
			return nil, err
		case sel == nil || sel(rec.Event):
			kept = append(kept, rec)
		}
	}
	return kept, nil
}

// records lists the record files under the clusters' roots: from the gate's hashes when
// it walked the tree already (in path order), else by listing it (in Git's tree order).
func (p *Pipeline) records(repo gitrepo.Tree, read *resyncRead) ([]string, error) {
	var records []string
	if read != nil {
		for f := range read.hashes {
			if path.Base(f) == recordFile {
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
			if path.Base(f) == recordFile {
				records = append(records, f)
			}
		}
	}
	return records, nil
}

// readForGate reads, when p has a Gate and repo is one commit that can hash its paths,
// that commit, the hash of every path under the clusters' roots and the digest of p's
// settings; nil otherwise.
func (p *Pipeline) readForGate(repo gitrepo.Tree) (*resyncRead, error) {
	h, ok := repo.(interface {
		Hashes(dir string) (map[string]string, error)
		Commit() plumbing.Hash
	})
	if p.Gate == nil || !ok {
		return nil, nil
	}
	settings, err := p.settings()
	if err != nil {
		return nil, nil // settings it cannot digest: no gate
	}
	read := &resyncRead{commit: h.Commit(), settings: settings}
	for _, root := range p.Config.Roots() {
		at, err := h.Hashes(root)
		if err != nil {
			return nil, stepError("read", err)
		}
		if read.hashes == nil {
			read.hashes = at
			continue
		}
		maps.Copy(read.hashes, at)
	}
	return read, nil
}

// settings digests what a plan's outcome depends on besides the tree: the generator's
// configuration, how Secrets are written, and the build that renders.
func (p *Pipeline) settings() ([sha256.Size]byte, error) {
	cfg, err := json.Marshal(p.Config)
	if err != nil {
		return [sha256.Size]byte{}, err
	}
	build := ""
	if p.Gate != nil {
		build = p.Gate.Build
	}
	h := sha256.New()
	h.Write(cfg)
	h.Write([]byte("\x00" + p.Secrets.encoding() + "\x00" + build))
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum, nil
}

// readData reads one record, undecoded; nil when its directory is settled (read says so)
// or the record is gone.
func (p *Pipeline) readData(repo gitrepo.Tree, f string, read *resyncRead) (*ResyncRecord, error) {
	if read != nil && p.Gate.IsSettled(read.key(path.Dir(f)), read.hashes) {
		return nil, nil
	}
	data, ok, err := repo.ReadFile(f)
	if err != nil {
		return nil, stepError("read", err)
	}
	if !ok {
		return nil, nil
	}
	return &ResyncRecord{Path: f, Data: data, read: read}, nil
}

// key is the gate's name for a cluster directory of this read.
func (r *resyncRead) key(dir string) [sha256.Size]byte {
	return gate.SettledKey(r.settings, r.hashes[dir])
}

// PlanResync is a resync's render and plan of one cluster, on tree: its record rendered
// again by this magnum-gitops and diffed against what tree holds. It is nil when nothing
// changes: the directory is as rendered, an upgrade chain is under way (the upgrade step
// moves it), or tree holds another record than the one read (an event committed since is
// newer, and committing the old record would undo it). The reconcile of the cluster calls
// it on the tree its commit follows; resync --dry-run on the commit it read.
func (p *Pipeline) PlanResync(ctx context.Context, rec *ResyncRecord, tree gitrepo.Tree) (*Plan, error) {
	cur, ok, err := tree.ReadFile(rec.Path)
	if err != nil {
		return nil, stepError("read", err)
	}
	if !ok || !bytes.Equal(cur, rec.Data) {
		return nil, nil
	}
	res, err := p.render(ctx, rec.Event)
	if err != nil {
		return nil, err
	}
	pl, err := p.Plan(rec.Event, res, tree)
	if errors.Is(err, errUpgradeInProgress) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if pl.NoOp() {
		p.settle(rec, pl, tree)
		return nil, nil
	}
	asResync(pl)
	return pl, nil
}

// settle tells the Gate that a record's directory renders to what it holds, when tree is
// the commit the resync read (whose hashes it has): the next resync of these settings
// skips it, unread, while it and the other paths its plan covers stay as they are.
func (p *Pipeline) settle(rec *ResyncRecord, pl *Plan, tree gitrepo.Tree) {
	if p.Gate == nil || rec.read == nil {
		return
	}
	if t, ok := tree.(interface{ Commit() plumbing.Hash }); !ok || t.Commit() != rec.read.commit {
		return
	}
	dir := path.Dir(rec.Path)
	p.Gate.Settle(rec.read.key(dir), outside(pl.Files, dir, rec.read.hashes))
}

// asResync rewrites a plan's message: it is the generator that changed, not the cluster.
// The event's id and digest are left out so that they stay the original event's.
func asResync(pl *Plan) {
	r := pl.Result
	pl.Commit.Subject = "magnum-gitops: resync cluster " + r.ClusterName + " (" + r.ReleaseName + ") in project " + r.ProjectID
	pl.Commit.Body = "Rendered again from " + recordFile + " by the current magnum-gitops; the cluster itself did not change.\n\n" + pl.Commit.Body
	pl.Commit.Trailers = append(withoutEvent(pl.Commit.Trailers), gitrepo.Trailer{Key: trailerResync, Value: "true"})
}

// withoutEvent is a commit's trailers without the event's id and digest, for a commit no
// Magnum event asked for (a resync, an upgrade chain's later step): they stay with the
// commit that answered the event, which a retry of it must find.
func withoutEvent(trailers []gitrepo.Trailer) []gitrepo.Trailer {
	var kept []gitrepo.Trailer
	for _, t := range trailers {
		if t.Key != trailerEventID && t.Key != trailerEventDigest {
			kept = append(kept, t)
		}
	}
	return kept
}

// outside lists the paths a plan covers outside the cluster directory dir (the
// namespace's file, the chart source), with what the tree holds there.
func outside(fs *generator.FileSet, dir string, hashes map[string]string) []gate.PathHash {
	var out []gate.PathHash
	add := func(p string) {
		if !strings.HasPrefix(p, dir+"/") {
			out = append(out, gate.PathHash{Path: p, Hash: hashes[p]})
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
