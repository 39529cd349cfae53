package reconciler

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
)

// ErrIdempotencyConflict is returned when an event id arrives again with a different body.
// The id is the client's promise that a retry is the same request; breaking it is a
// conflict.
var ErrIdempotencyConflict = errors.New("event id already used for a different event")

// Digest identifies an event's content, Secret material included, so that a retry can be
// told from a new event under an old id. Only the hash leaves the process.
func Digest(ev *v1alpha1.ClusterEvent) string {
	b, err := json.Marshal(ev)
	if err != nil {
		// Every field of a decoded event marshals; this cannot happen.
		panic(fmt.Sprintf("reconciler: digest: %v", err))
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Ledger remembers which event ids were answered with what, so a retried POST gets the
// same answer and no second commit. It is rebuilt from the commit trailers after a restart
// (LoadLedger), so the promise survives the process.
type Ledger struct {
	mu      sync.Mutex
	entries map[string]ledgerEntry
}

type ledgerEntry struct {
	digest  string
	summary Summary
}

// NewLedger returns an empty ledger.
func NewLedger() *Ledger { return &Ledger{entries: map[string]ledgerEntry{}} }

// Lookup returns the summary recorded for an event id. ok is false for an unknown id; an
// id recorded with another digest returns ErrIdempotencyConflict.
func (l *Ledger) Lookup(id, digest string) (Summary, bool, error) {
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
		return Summary{}, true, &Error{Kind: KindConflict, Step: "accept", Err: fmt.Errorf("event %q: %w", id, ErrIdempotencyConflict)}
	}
	return e.summary, true, nil
}

// Put records a successful answer.
func (l *Ledger) Put(id, digest string, s Summary) {
	if id == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries[id] = ledgerEntry{digest: digest, summary: s}
}

// Len counts the recorded ids.
func (l *Ledger) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.entries)
}
