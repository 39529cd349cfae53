// Package gate is a cache of what the reconciler's one rule for an unchanged file
// (reconciler/unchanged.go) found: which file an input became, so that only what changed
// is serialised or encrypted, and which cluster directories a resync found settled, kept
// across a restart of the same build. It decides nothing: every answer it gives is read
// back from the tree.
package gate

import (
	"crypto/sha256"
	"sync"
)

// gateSize bounds the digests a Gate keeps: about 36 files for each of 10,000 clusters
// (several versions of each), some 30 MB. A full gate starts again empty, and the next
// plan of each cluster serialises once more.
const gateSize = 1 << 18

// jsonSize bounds the deploy files whose JSON a Gate keeps (a few KB each): the clusters
// written most recently, which are the ones the next events change.
const jsonSize = 1 << 12

// settledSize bounds the cluster directories a Gate knows to be settled: more than the
// 10,000 clusters a resync is sized for, some 2 MB.
const settledSize = 1 << 15

// Gate lets a plan compare an object with the tree by a digest instead of by serialising
// it: most plans (every cluster of a resync, every group of a scale event) write objects
// the repository already holds, and serialising them was most of a plan's time. It
// remembers, for the digest of an input (an object's JSON, with what its encoding depends
// on), the SHA-256 of the file the input became; when the file a tree holds at the
// input's path has that hash, the plan takes the tree's bytes as they are (Held). Its
// settled directories are plans' own answers too: a directory whose plan changed nothing,
// kept with everything that answer read.
//
// A Gate is safe for concurrent plans; the zero value is ready and a nil *Gate gates
// nothing (a one-shot command has nothing to remember).
type Gate struct {
	// Build identifies the code that renders (a released version, or a clean checkout's
	// revision); the settled directories are kept under it, and saved only when it is set.
	Build string
	// File, when set, is where Save keeps the settled directories and Load finds them.
	File string

	mu sync.Mutex
	// known maps an input digest (an object's JSON, with what its encoding depends on) to
	// the SHA-256 of a file that holds it.
	known map[[sha256.Size]byte][sha256.Size]byte
	// json maps the SHA-256 of a HelmRelease or Application file to the object's JSON: the
	// next change of that cluster compares itself with what is deployed (upgrade rules, the
	// commit message) without parsing the file's YAML.
	json map[[sha256.Size]byte][]byte
	// settled holds, by SettledKey (a pipeline's settings and a cluster directory's
	// tree), the directories whose record rendered to exactly what the tree held, with
	// the other paths their plan covered (the namespace's file, the chart source) and
	// what those held: a resync skips such a directory, unread, while all of it stays.
	settled map[[sha256.Size]byte][]PathHash
}

// PathHash is a path of a tree and the hash of what it holds there ("" when absent).
type PathHash struct{ Path, Hash string }

// Tree is what the gate reads of a repository: a file at a path, and whether it is there.
type Tree interface {
	ReadFile(path string) ([]byte, bool, error)
}

// SettledKey names a cluster directory's tree under a pipeline's settings (settings is
// a digest of them, with the Gate's Build): what one pipeline rendered to nothing, another
// may not.
func SettledKey(settings [sha256.Size]byte, dirHash string) [sha256.Size]byte {
	h := sha256.New()
	h.Write(settings[:])
	h.Write([]byte(dirHash))
	var k [sha256.Size]byte
	h.Sum(k[:0])
	return k
}

// IsSettled reports whether the directory key names rendered to nothing before, with
// every other path its plan covered holding what it held then (hashes are the tree's).
func (g *Gate) IsSettled(key [sha256.Size]byte, hashes map[string]string) bool {
	if g == nil {
		return false
	}
	g.mu.Lock()
	deps, ok := g.settled[key]
	g.mu.Unlock()
	if !ok {
		return false
	}
	for _, d := range deps {
		if hashes[d.Path] != d.Hash {
			return false
		}
	}
	return true
}

// Settle notes that the directory key names renders to nothing while deps, the other
// paths its plan covers, hold what they hold now.
func (g *Gate) Settle(key [sha256.Size]byte, deps []PathHash) {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.settled == nil || len(g.settled) >= settledSize {
		g.settled = make(map[[sha256.Size]byte][]PathHash)
	}
	g.settled[key] = deps
}

// RememberJSON notes that the deploy file b holds the object whose JSON is j.
func (g *Gate) RememberJSON(b, j []byte) {
	if g == nil {
		return
	}
	sum := sha256.Sum256(b)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.json == nil || len(g.json) >= jsonSize {
		g.json = make(map[[sha256.Size]byte][]byte)
	}
	g.json[sum] = j
}

// JSONOf returns the JSON of the object the deploy file b holds, when the gate knows it.
func (g *Gate) JSONOf(b []byte) []byte {
	if g == nil {
		return nil
	}
	sum := sha256.Sum256(b)
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.json[sum]
}

// Wrote reports whether the file b is one the gate remembers as written for the input
// that is b itself (Remember(sha256(b), b)): a record in the current encoding.
func (g *Gate) Wrote(b []byte) bool {
	if g == nil {
		return false
	}
	sum := sha256.Sum256(b)
	g.mu.Lock()
	defer g.mu.Unlock()
	out, ok := g.known[sum]
	return ok && out == sum
}

// Held returns the tree's file at path when the gate knows that file to hold the input
// in (the tree is read, and its file's hash compared: the gate only spares serialising).
func (g *Gate) Held(tree Tree, path string, in [sha256.Size]byte) ([]byte, bool) {
	if g == nil {
		return nil, false
	}
	g.mu.Lock()
	want, ok := g.known[in]
	g.mu.Unlock()
	if !ok {
		return nil, false
	}
	have, ok, err := tree.ReadFile(path)
	if err != nil || !ok || sha256.Sum256(have) != want {
		return nil, false
	}
	return have, true
}

// Remember notes that the file b holds the input in.
func (g *Gate) Remember(in [sha256.Size]byte, b []byte) {
	if g == nil {
		return
	}
	sum := sha256.Sum256(b)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.known == nil || len(g.known) >= gateSize {
		g.known = make(map[[sha256.Size]byte][sha256.Size]byte)
	}
	g.known[in] = sum
}
