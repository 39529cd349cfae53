package reconciler

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/gitrepo"
)

// This file holds the one rule for event ids: an id names one event body (its eventDigest);
// the first commit that carried it answers every retry of it, with no second commit; the
// same id with another body is ErrIdempotencyConflict. The rule is applied to what is
// known of Git where it is known, each a view of the same trailers and records:
//   - replayed, in a reconcile's prologue: the ledger (the answers of this process and the
//     trailers of the history it read) and the ids of the operations reconciled with it;
//   - checkReusedID, in the plan, on the tree the commit follows: the record of the
//     cluster's last event, which another replica may have committed after this one last
//     read the history.
//
// Both give one answer to a retry: "committed", Replayed, with the revision of the first
// commit that carried the id (replayed from the ledger; carried, after the plan's
// errCarried, from the ledger or the history), never "unchanged".

// errCarried: the tree a plan read holds the event as its cluster's record already — a
// retry of an event another replica committed (or this one, before its ledger learned
// it). It is answered as the ledger answers a retry (carried), never as "unchanged".
var errCarried = errors.New("the branch carries this event already")

// carried answers an operation whose plan found its event on the branch (errCarried) the
// way replayed answers one the ledger knows: the first commit that carried the id, marked
// Replayed. The ledger answers when it learned that commit since; otherwise the history
// does (the oldest commit, of the newest ledgerHistory, whose Magnum-Event-ID trailer
// names the id), and the ledger learns it. A history too shallow to hold it still answers
// "committed", with no revision.
func (r *Reconciler) carried(op *operation) Summary {
	if r.ledger != nil {
		if sum, ok, err := r.ledger.Lookup(op.ev.ID, op.digest); err == nil && ok && sum.Revision != "" {
			sum.Replayed, sum.Timings = true, Timings{}
			return sum
		}
	}
	sum := Summary{EventID: op.ev.ID, Operation: op.ev.Operation, ClusterUUID: op.ev.Cluster.UUID, Outcome: OutcomeCommitted}
	var first *gitrepo.CommitInfo
	n := 0
	_ = r.Sink.Repo.Walk(context.Background(), func(c gitrepo.CommitInfo) error {
		if n++; n > ledgerHistory {
			return gitrepo.ErrStopWalk
		}
		if id, ok := c.Trailer(trailerEventID); ok && id == op.ev.ID {
			first = &c
		}
		return nil
	})
	if first != nil {
		sum = summaryOf(op.ev.ID, *first)
		if digest, ok := first.Trailer(trailerEventDigest); ok && r.ledger != nil {
			r.ledger.learn(op.ev.ID, digest, *first)
		}
	}
	sum.Replayed = true
	return sum
}

// replayed answers an operation whose id is known already: with the answer of the first
// time (marked Replayed: nothing was done now), or a conflict when the body differs from
// the one the id was answered with, or from another operation of the group under it.
func (r *Reconciler) replayed(op *operation, seen map[string]string) (Summary, bool) {
	if r.ledger != nil {
		if sum, ok, err := r.ledger.Lookup(op.ev.ID, op.digest); err != nil {
			return NewSummary(op.ev, nil, err), true
		} else if ok {
			sum.Replayed, sum.Timings = true, Timings{}
			return sum, true
		}
	}
	if id := op.ev.ID; id != "" {
		if d, ok := seen[id]; ok && d != op.digest {
			return NewSummary(op.ev, nil, &failure{Kind: KindConflict, Step: "accept", Err: fmt.Errorf("event %q: %w", id, ErrIdempotencyConflict)}), true
		}
		seen[id] = op.digest
	}
	return Summary{}, false
}

// eventDigest identifies an event's content, Secret material included, so that a retry can be
// told from a new event under an old id. Only the hash leaves the process.
func eventDigest(ev *v1alpha1.ClusterEvent) string {
	b, err := json.Marshal(ev)
	if err != nil {
		// Every field of a decoded event marshals; this cannot happen.
		panic(fmt.Sprintf("reconciler: digest: %v", err))
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// ledger remembers which event ids were answered with what, so a retried POST gets the
// same answer and no second commit. It is rebuilt from the commit trailers after a restart
// (loadLedger, through Reconciler.ReadHistory), so the promise survives the process. It
// holds the newest ledgerHistory ids, about the horizon a restart reads back (the ids of
// the newest ledgerHistory commits), so a long-running service answers a retry much as a
// restarted one would, in bounded memory. Only the Reconciler and its follower use it: no
// caller names it.
type ledger struct {
	mu      sync.Mutex
	entries map[string]ledgerEntry
	// order holds the ids oldest first; the oldest leaves when there are more than max.
	order []string
	max   int
}

type ledgerEntry struct {
	digest  string
	summary Summary
}

// newLedger returns an empty ledger that holds the newest limit ids (ledgerHistory but in
// tests).
func newLedger(limit int) *ledger { return &ledger{entries: map[string]ledgerEntry{}, max: limit} }

// set records an id's entry, the newest; the oldest id leaves beyond max. l.mu is held.
func (l *ledger) set(id string, e ledgerEntry) {
	if _, ok := l.entries[id]; !ok {
		l.order = append(l.order, id)
		if len(l.order) > l.max {
			delete(l.entries, l.order[0])
			l.order[0] = ""
			l.order = l.order[1:]
		}
	}
	l.entries[id] = e
}

// Lookup returns the summary recorded for an event id. ok is false for an unknown id; an
// id recorded with another digest returns ErrIdempotencyConflict.
func (l *ledger) Lookup(id, digest string) (Summary, bool, error) {
	if id == "" {
		return Summary{}, false, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.entries[id]
	switch {
	case !ok:
		return Summary{}, false, nil
	case e.digest != digest:
		return Summary{}, true, &failure{Kind: KindConflict, Step: "accept", Err: fmt.Errorf("event %q: %w", id, ErrIdempotencyConflict)}
	}
	return e.summary, true, nil
}

// Put records a successful answer.
func (l *ledger) Put(id, digest string, s Summary) {
	if id == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.set(id, ledgerEntry{digest: digest, summary: s})
}

// Len counts the recorded ids.
func (l *ledger) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.entries)
}

// ledgerHistory bounds how far back loadLedger reads: retries come within minutes. The
// history serve clones by default (config.DefaultHistory) reaches as far back
// (TestDefaultHistoryIsWhatTheLedgerReads).
const ledgerHistory = 20000

// loadLedger rebuilds the ledger from the commit trailers of the newest ledgerHistory
// commits, so that after a restart a retried event id is answered with the commit that
// carried it, and an id reused with another body is still refused.
func loadLedger(ctx context.Context, repo *gitrepo.Repo) (*ledger, error) {
	l := newLedger(ledgerHistory)
	n := 0
	var newestFirst []string
	err := repo.Walk(ctx, func(c gitrepo.CommitInfo) error {
		if n++; n > ledgerHistory {
			return gitrepo.ErrStopWalk
		}
		id, ok1 := c.Trailer(trailerEventID)
		digest, ok2 := c.Trailer(trailerEventDigest)
		if !ok1 || !ok2 {
			return nil
		}
		if _, seen := l.entries[id]; seen {
			return nil // a newer commit already answered this id
		}
		l.entries[id] = ledgerEntry{digest: digest, summary: summaryOf(id, c)}
		newestFirst = append(newestFirst, id)
		return nil
	})
	slices.Reverse(newestFirst)
	l.order = newestFirst
	return l, err
}

// learn records an event id read from a commit made elsewhere, unless it is known: the
// first commit that carried an id answers its retries.
func (l *ledger) learn(id, digest string, c gitrepo.CommitInfo) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.entries[id]; ok && e.summary.Revision != "" {
		return
	}
	// Unknown, or known without its commit (a push that landed but failed to answer,
	// whose retry found nothing to do): the commit read here carried it.
	l.set(id, ledgerEntry{digest: digest, summary: summaryOf(id, c)})
}

// summaryOf is the answer a commit that carried an event gives to its retries.
func summaryOf(id string, c gitrepo.CommitInfo) Summary {
	uuid, _ := c.Trailer(trailerClusterUUID)
	stackID, _ := c.Trailer(trailerStackID)
	op, _ := c.Trailer(trailerOperation)
	return Summary{EventID: id, Operation: v1alpha1.Operation(op), ClusterUUID: uuid, StackID: stackID,
		Outcome: OutcomeCommitted, Revision: c.Hash.String()}
}

// Revision returns the commit recorded for an event id.
func (l *ledger) Revision(id string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.entries[id].summary.Revision
}

// checkReusedID refuses an event whose id is the id of the event recorded for its cluster
// at base with another body: the ledger of a replica learns ids committed by the others
// only when it next reads the history, but base is what the commit will follow, so this
// holds across replicas for a cluster's last event. A record of the same event (a retry)
// passes, and the plan then finds nothing to change.
func checkReusedID(base gitrepo.Tree, record string, ev *v1alpha1.ClusterEvent) error {
	if ev.ID == "" {
		return nil
	}
	data, ok, err := base.ReadFile(record)
	if err != nil {
		return stepError("read", err)
	}
	// Decoding costs more than the rest of the check: skip it when the id cannot be in
	// the record, which is every new event. Ids of other characters may be escaped there.
	if !ok || (plainID(ev.ID) && !bytes.Contains(data, []byte(ev.ID))) {
		return nil
	}
	want, err := encodeRecord(inherit(ev, data))
	switch {
	case err != nil:
		return nil // an event that does not encode, which the plan reports
	case bytes.Equal(want, data):
		return errCarried // a retry
	}
	rec, err := readRecord(data)
	if err != nil || rec.ID != ev.ID {
		return nil // a corrupt record is the plan's to overwrite
	}
	if sameEvent(rec, want) {
		return errCarried // a retry, recorded in an older encoding
	}
	return &failure{Kind: KindConflict, Step: "accept", Err: fmt.Errorf("event %q: %w", ev.ID, ErrIdempotencyConflict)}
}

// plainID reports whether an id is written as is in YAML (letters, digits, '-', '_', '.',
// ':'), so that its absence from a record's bytes proves it is not there.
func plainID(id string) bool {
	for _, c := range id {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', strings.ContainsRune("-_.:", c):
		default:
			return false
		}
	}
	return true
}
