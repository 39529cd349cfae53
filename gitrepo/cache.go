package gitrepo

import (
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/format/objfile"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/storage/filesystem/dotgit"
	"github.com/go-git/go-git/v5/storage/memory"
)

// localError marks a failure of the local clone (an unreadable object or ref), as opposed
// to the remote's: the remote is the truth, so the clone is discarded and fetched again.
type localError struct{ err error }

func (e *localError) Error() string { return "gitrepo: local clone: " + e.err.Error() }
func (e *localError) Unwrap() error { return e.err }

// isDamage reports errors that mean the local clone is unreadable.
func isDamage(err error) bool {
	var le *localError
	var pe *packfile.Error
	return errors.As(err, &le) || isStoreDamage(err) || errors.As(err, &pe) ||
		errors.Is(err, packfile.ErrMalformedPackFile) || errors.Is(err, packfile.ErrInflatedSizeMismatch) ||
		errors.Is(err, zlib.ErrHeader) || errors.Is(err, zlib.ErrChecksum)
}

// isStoreDamage reports errors only the local store gives: a fetch that fails with a bad
// pack may have received it from the remote, but a bad ref or a missing object is ours.
func isStoreDamage(err error) bool {
	return errors.Is(err, plumbing.ErrObjectNotFound) || errors.Is(err, dotgit.ErrEmptyRefFile) ||
		errors.Is(err, dotgit.ErrPackedRefsBadFormat) || errors.Is(err, dotgit.ErrPackedRefsDuplicatedRef) ||
		errors.Is(err, dotgit.ErrSymRefTargetNotFound) || errors.Is(err, dotgit.ErrIsDir) ||
		errors.Is(err, dotgit.ErrIdxNotFound) || errors.Is(err, dotgit.ErrPackfileNotFound) ||
		errors.Is(err, idxfile.ErrMalformedIdxFile) || errors.Is(err, objfile.ErrHeader) ||
		errors.Is(err, plumbing.ErrInvalidType)
}

// load opens the local clone, checks it, and fetches the branch; a damaged clone is
// discarded and fetched again once. Callers hold mu.
func (r *Repo) load(ctx context.Context) error {
	if err := r.openLocal(); err != nil {
		if r.opts.CacheDir == "" {
			return fmt.Errorf("gitrepo: opening the local clone: %w", err)
		}
		return r.heal(ctx, err)
	}
	err := r.fetch(ctx, r.opts.Branch, true)
	if err == nil {
		err = r.checkHead()
	}
	var le *localError
	if errors.As(err, &le) {
		return r.heal(ctx, le.err)
	}
	return err
}

// objectCacheSize bounds go-git's cache of decoded objects for a clone on disk. Its default
// (96 MiB) fills with the commits a start walks (the ledger's) and stays full; the reads
// that repeat have their own caches here (treeCache, blobCache), so this one only spares
// delta bases a second inflate. Every MiB it holds is about two of serve's peak RSS.
const objectCacheSize = 4 * cache.MiByte

// openLocal opens (or creates) the local clone and checks what Apply relies on: the
// remote is ours, every ref reads, and the branch's commit and tree are there.
func (r *Repo) openLocal() error {
	return r.locked(func() error {
		if r.opts.CacheDir != "" {
			if err := checkPacks(r.opts.CacheDir); err != nil {
				return err
			}
			r.store = newPendingStore(r.opts.CacheDir)
		} else {
			r.store = memory.NewStorage()
		}
		var err error
		r.repo, err = git.Open(r.store, nil)
		if errors.Is(err, git.ErrRepositoryNotExists) {
			return r.initLocal()
		}
		if err != nil {
			return err
		}
		rem, err := r.repo.Remote("origin")
		if err != nil {
			return err
		}
		if urls := rem.Config().URLs; len(urls) != 1 || urls[0] != r.opts.URL {
			return errors.New("it is a clone of another remote")
		}
		refs, err := r.store.IterReferences()
		if err != nil {
			return err
		}
		if err := refs.ForEach(func(*plumbing.Reference) error { return nil }); err != nil {
			return err
		}
		return r.checkHeadLocked()
	})
}

// checkPacks checks that every pack of an on-disk clone has a readable index. go-git
// writes a fetched pack's index in place before it renames the pack into place, so a
// crash can leave a pack without its index, or an index without its pack that would stop
// a later fetch from writing a good one: such an orphan index is removed.
func checkPacks(dir string) error {
	packDir := filepath.Join(dir, "objects", "pack")
	idx, _ := filepath.Glob(filepath.Join(packDir, "pack-*.idx"))
	for _, f := range idx {
		if _, err := os.Stat(strings.TrimSuffix(f, ".idx") + ".pack"); errors.Is(err, os.ErrNotExist) {
			if err := os.Remove(f); err != nil {
				return err
			}
		}
	}
	packs, _ := filepath.Glob(filepath.Join(packDir, "pack-*.pack"))
	for _, p := range packs {
		f, err := os.Open(strings.TrimSuffix(p, ".pack") + ".idx")
		if err != nil {
			return fmt.Errorf("pack %s: %w", filepath.Base(p), err)
		}
		err = idxfile.NewDecoder(f).Decode(idxfile.NewMemoryIndex())
		f.Close()
		if err != nil {
			return fmt.Errorf("index of pack %s: %w", filepath.Base(p), err)
		}
	}
	return nil
}

// initLocal makes an empty clone. Callers hold st.
func (r *Repo) initLocal() error {
	var err error
	if r.repo, err = git.Init(r.store, nil); err != nil {
		return err
	}
	_, err = r.repo.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{r.opts.URL}})
	return err
}

// checkHead reads the branch's commit and root tree.
func (r *Repo) checkHead() error {
	return r.locked(r.checkHeadLocked)
}

func (r *Repo) checkHeadLocked() error {
	h, err := r.head(r.opts.Branch)
	if err != nil {
		return &localError{err}
	}
	tree, err := r.treeOf(h)
	if err == nil && !tree.IsZero() {
		_, err = r.store.EncodedObject(plumbing.TreeObject, tree)
	}
	if err != nil {
		return &localError{err}
	}
	return nil
}

// healIfDamaged starts a write: it heals a clone that a reader found damaged, or whose
// branch head no longer reads. Callers hold mu.
func (r *Repo) healIfDamaged(ctx context.Context) error {
	var cause error
	_ = r.locked(func() error {
		if cause = r.damaged; cause == nil {
			cause = r.checkHeadLocked()
		}
		return nil
	})
	if cause == nil {
		return nil
	}
	var le *localError
	if errors.As(cause, &le) {
		cause = le.err
	}
	return r.heal(ctx, cause)
}

// heal discards the local clone and fetches the branch again. Callers hold mu.
func (r *Repo) heal(ctx context.Context, cause error) error {
	where := "in memory"
	if r.opts.CacheDir != "" {
		where = "in " + r.opts.CacheDir
	}
	r.warn(fmt.Sprintf("gitrepo: the local clone %s is damaged (%v); discarding it and fetching again from the remote", where, cause))
	err := r.locked(func() error {
		r.damaged = nil
		if r.opts.CacheDir != "" {
			if err := wipeClone(r.opts.CacheDir); err != nil {
				return err
			}
			r.store = newPendingStore(r.opts.CacheDir)
		} else {
			r.store = memory.NewStorage()
		}
		return r.initLocal()
	})
	if err != nil {
		return fmt.Errorf("gitrepo: discarding the damaged clone %s: %w", where, err)
	}
	if err := r.fetch(ctx, r.opts.Branch, true); err != nil {
		return err
	}
	if err := r.checkHead(); err != nil {
		return fmt.Errorf("gitrepo: the clone fetched again is unreadable: %w", err)
	}
	return nil
}

// gitEntries are the names a bare repository keeps at its top level. Healing removes only
// these, so a cache_dir pointed at the wrong directory loses nothing else.
var gitEntries = map[string]bool{
	"HEAD": true, "config": true, "description": true, "objects": true, "refs": true,
	"packed-refs": true, "hooks": true, "info": true, "logs": true, "index": true,
	"shallow": true, "FETCH_HEAD": true, "ORIG_HEAD": true, "branches": true,
	"modules": true, "worktrees": true,
}

// wipeClone removes a bare repository's entries (and leftover lock files) from dir.
func wipeClone(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	for _, e := range entries {
		if !gitEntries[e.Name()] && !strings.HasSuffix(e.Name(), ".lock") {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

func (r *Repo) warn(msg string) {
	if r.opts.Warn != nil {
		r.opts.Warn(msg)
	}
}

// noteDamage records that a read found the local clone unreadable. Callers hold st.
func (r *Repo) noteDamage(err error) error {
	if err != nil && isDamage(err) {
		r.damaged = err
	}
	return err
}
