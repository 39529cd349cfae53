package gitrepo

import (
	"errors"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// maxLineage bounds the commits the chain index holds (about 70 bytes each). Contains needs
// it only for commits younger than the clock skew; older ones are answered by time.
const maxLineage = 1 << 18

// lineage numbers one stretch of first-parent history, oldest first, so that whether one
// indexed commit is in another's history is a comparison of two numbers.
//
// The branch only moves forward and its writers never merge, so its heads follow one
// first-parent chain; without the index, a busy repository (hundreds of commits a second)
// made every Contains walk back through all the commits since the one asked about, under
// the store's lock. Ancestry between commit ids never changes, so nothing here goes stale:
// a head that does not continue the chain (a merge's side, a history that was replaced)
// is answered by the walk, and a chain that cannot be continued is started again.
type lineage struct {
	pos   map[plumbing.Hash]int64 // commit → its number; pos[order[i]] == base+i
	order []plumbing.Hash
	base  int64
	limit int // of commits held; 0 is maxLineage
	// newest is the commit time of the chain's newest commit.
	newest time.Time
}

// index reports c's number, if c is on the chain.
func (l *lineage) index(c plumbing.Hash) (int64, bool) {
	p, ok := l.pos[c]
	return p, ok
}

// extend adds h and the commits between the chain's newest commit and h, when h
// continues the chain along first parents, and otherwise leaves the chain alone. When h
// reaches no commit of the chain before oldest (or the chain is empty) and restart is set,
// the chain starts again as h's first-parent history back to oldest, if it has any.
// Without restart the walk also stops at the chain's newest commit time less the clock
// skew: a commit that continues the chain is no older than that. It walks only commits it
// has not numbered, so a sequence of heads costs the commits between them, once.
func (l *lineage) extend(s storer.EncodedObjectStorer, h plumbing.Hash, oldest time.Time, restart bool) error {
	if _, ok := l.pos[h]; ok {
		return nil
	}
	if !restart {
		if len(l.order) == 0 {
			return nil
		}
		if b := l.newest.Add(-clockSkew); b.After(oldest) {
			oldest = b
		}
	}
	var walked []plumbing.Hash // newest first
	var newest time.Time       // h's commit time
	for id := h; ; {
		if _, ok := l.pos[id]; ok {
			if id != l.order[len(l.order)-1] {
				return nil // h forks off the chain: not indexed
			}
			l.append(walked, newest)
			return nil
		}
		cm, err := object.GetCommit(s, id)
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			break // not fetched, or beyond a shallow boundary
		}
		if err != nil {
			return err
		}
		if cm.Committer.When.Before(oldest) {
			break
		}
		if len(walked) == 0 {
			newest = cm.Committer.When
		}
		walked = append(walked, id)
		if len(cm.ParentHashes) == 0 {
			break
		}
		id = cm.ParentHashes[0]
	}
	if restart && len(walked) > 0 { // else nothing is known of h: keep what is
		l.reset(walked, newest)
	}
	return nil
}

// append numbers walked (newest first, the first committed at newest) after the chain's
// newest commit.
func (l *lineage) append(walked []plumbing.Hash, newest time.Time) {
	l.newest = newest
	for i := len(walked) - 1; i >= 0; i-- {
		l.pos[walked[i]] = l.base + int64(len(l.order))
		l.order = append(l.order, walked[i])
	}
	limit := l.limit
	if limit == 0 {
		limit = maxLineage
	}
	if drop := len(l.order) - limit; drop > 0 {
		drop += limit / 4 // trim in steps, not on every commit
		for _, id := range l.order[:drop] {
			delete(l.pos, id)
		}
		l.order = append(l.order[:0], l.order[drop:]...)
		l.base += int64(drop)
	}
}

// reset starts the chain again with walked (newest first, the first committed at newest).
func (l *lineage) reset(walked []plumbing.Hash, newest time.Time) {
	l.pos = make(map[plumbing.Hash]int64, len(walked))
	l.order = l.order[:0]
	l.base = 0
	l.append(walked, newest)
}
