package gitrepo

import (
	"errors"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// clockSkew bounds how far apart the clocks of two writers of the repository may be. The
// history walk of Contains stops at commits older than the one looked for by more than
// this: their ancestors are older still.
const clockSkew = 10 * time.Minute

// Contains reports whether commit is head or in head's history, as far as the local object
// store knows them: a head that was never fetched gives false, not an error, so a caller
// asks again after the next fetch. Both are full hexadecimal commit ids.
//
// A Flux source fetches the branch head, so the revision Flux applied is usually a later
// commit than the one carrying an operation; this is how a caller tells "applied" from
// "not yet". Both are commits of the branch, which only moves forward (pushes are never
// forced), so a head committed more than the clock skew after commit is taken to contain
// it without a walk: a status sweep over thousands of clusters whose last commits are old
// must not walk the history once per cluster. Otherwise the first-parent chain of the
// branch (lineage.go) answers for the commits on it, and the walk, which goes back from head
// only as far as the commit's own time less the skew, for the others.
func (r *Repo) Contains(head, commit string) (bool, error) {
	if head == commit {
		return true, nil
	}
	if !plumbing.IsHash(head) || !plumbing.IsHash(commit) {
		return false, nil
	}
	h, c := plumbing.NewHash(head), plumbing.NewHash(commit)
	var found bool
	err := r.locked(func() error {
		target, err := r.heldCommit(c)
		if target == nil {
			return err
		}
		tip, err := r.heldCommit(h)
		if tip == nil {
			return err // nil when not fetched yet
		}
		if tip.Committer.When.After(target.Committer.When.Add(clockSkew)) {
			found = true
			return nil
		}
		oldest := target.Committer.When.Add(-clockSkew)
		if err := r.lineage.extend(r.store, h, oldest, true); err != nil {
			return err
		}
		if ph, ok := r.lineage.index(h); ok {
			pc, ok := r.lineage.index(c)
			if !ok {
				// A commit after head (not applied yet, the usual answer under load)
				// continues the chain past it: number it rather than walk back from head
				// through every commit of the skew without meeting it.
				if err := r.lineage.extend(r.store, c, oldest, false); err != nil {
					return err
				}
				pc, ok = r.lineage.index(c)
			}
			if ok {
				found = pc <= ph
				return nil
			}
		}
		// Off the chain (a merged side, or older than the chain reaches): walk.
		seen := map[plumbing.Hash]bool{}
		queue := []plumbing.Hash{h}
		for len(queue) > 0 {
			id := queue[0]
			queue = queue[1:]
			if seen[id] {
				continue
			}
			seen[id] = true
			if id == c {
				found = true
				return nil
			}
			cm, err := r.heldCommit(id)
			if err != nil {
				return err
			}
			if cm == nil {
				continue // not fetched (or beyond a shallow boundary)
			}
			if cm.Committer.When.Before(oldest) {
				continue
			}
			queue = append(queue, cm.ParentHashes...)
		}
		return nil
	})
	return found, err
}

// ContainsIn is Contains for a head of branch: Options.Branch, or a branch that publishes
// a part (Split). A published head includes commit when a commit of Options.Branch from
// commit on publishes it: the part holds what that commit holds, which includes commit.
// Flux usually follows closely, so the remote head is tried first; otherwise the
// first-parent chain back to commit (bounded as Contains bounds its walk).
func (r *Repo) ContainsIn(branch, head, commit string) (bool, error) {
	s := r.opts.Split
	if s == nil || !strings.HasPrefix(branch, s.Prefix) {
		return r.Contains(head, commit)
	}
	if !plumbing.IsHash(head) || !plumbing.IsHash(commit) {
		return false, nil
	}
	part := strings.TrimPrefix(branch, s.Prefix)
	h, c := plumbing.NewHash(head), plumbing.NewHash(commit)
	var tip plumbing.Hash
	var published bool
	err := r.locked(func() error {
		target, err := r.heldCommit(c)
		if target == nil {
			return err
		}
		if tip, err = r.head(r.opts.Branch); err != nil {
			return err
		}
		oldest := target.Committer.When.Add(-clockSkew)
		for id := tip; ; {
			pubs, err := r.publish(nil, id, []string{part})
			if err != nil {
				return err
			}
			if pubs[0].commit == h {
				tip, published = id, true
				return nil
			}
			if id == c {
				return nil
			}
			cm, err := r.heldCommit(id)
			if cm == nil {
				return err // nil beyond a shallow clone's history
			}
			if len(cm.ParentHashes) == 0 || cm.Committer.When.Before(oldest) {
				return nil
			}
			id = cm.ParentHashes[0]
		}
	})
	if err != nil || !published {
		return false, err
	}
	return r.Contains(tip.String(), commit)
}

// heldCommit reads a commit of the local store: nil, and no error, when the store does not
// hold it. Callers hold st.
func (r *Repo) heldCommit(h plumbing.Hash) (*object.Commit, error) {
	c, err := object.GetCommit(r.store, h)
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return nil, nil
	}
	return c, err
}
