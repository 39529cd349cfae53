package gitrepo

import (
	"fmt"
	"path"

	"github.com/go-git/go-git/v5/plumbing"
)

// Planned is a change and the snapshot it was planned on. The change holds on any commit
// where everything the plan read reads the same as on that snapshot: a plan depends only on
// what it reads. That is how the changes of a group, planned side by side on one head,
// still land in one chain, and how a change outlives a remote that moved in paths it never
// looked at.
type Planned struct {
	Change
	// On is the snapshot the change was planned on, made by Snapshot.Recording; nil for a
	// change that read nothing (it holds on every commit).
	On *Snapshot
}

// Recording returns a snapshot of the same commit that records what is read from it: plan
// a change on it and add both to a Batch (Batch.Add). It may be read while other
// recordings of the same snapshot are.
func (s *Snapshot) Recording() *Snapshot {
	return &Snapshot{r: s.r, commit: s.commit, reads: &readSet{}}
}

// holds reports whether the plan p still holds on tip: every file it read and every
// directory it listed has the same object hash there as on the commit it was planned on.
// Callers hold st.
func (r *Repo) holds(p *Planned, tip plumbing.Hash) (bool, error) {
	switch {
	case p.On == nil:
		return true, nil
	case p.On.r != r:
		return false, fmt.Errorf("%w: planned on another repository's snapshot", ErrInvalidChange)
	case p.On.reads == nil:
		return false, fmt.Errorf("%w: planned on a snapshot that records nothing (see Snapshot.Recording)", ErrInvalidChange)
	case p.On.commit == tip:
		return true, nil
	}
	was, err := r.treeOf(p.On.commit)
	if err != nil {
		return false, err
	}
	now, err := r.treeOf(tip)
	if err != nil {
		return false, err
	}
	same := func(q string) (bool, error) {
		if q == "." {
			return was == now, nil
		}
		a, err := blobHash(r.store, was, q)
		if err != nil {
			return false, err
		}
		b, err := blobHash(r.store, now, q)
		return a == b, err
	}
	// Directories first: a file under one that reads the same reads the same itself, and a
	// plan reads most of its files in the directory it lists.
	equal := map[string]bool{}
	for _, d := range p.On.reads.dirs {
		if equal[d] {
			continue
		}
		if ok, err := same(d); err != nil || !ok {
			return false, err
		}
		equal[d] = true
	}
	if equal["."] {
		return true, nil
	}
	for _, f := range p.On.reads.files {
		if under(f, equal) {
			continue
		}
		if ok, err := same(f); err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

// under reports whether a directory above p is in dirs.
func under(p string, dirs map[string]bool) bool {
	for d := path.Dir(p); d != "."; d = path.Dir(d) {
		if dirs[d] {
			return true
		}
	}
	return false
}
