// Package gate lets the reconciler's plans compare what they would write with the tree by
// digest, so that only what changed is serialised or encrypted; it keeps what it knows of
// settled cluster directories across a restart of the same build.
package gate

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"path"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/magnum-gitops/magnum-gitops/generator"
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

// Gate lets Plan, which alone decides what changed, compare an object with the tree by a
// digest instead of by serialising it: most plans (every cluster of a resync, every group
// of a scale event) write objects the repository already holds, and serialising them was
// most of a plan's time. It remembers, for the SHA-256 of an object's JSON, the SHA-256 of
// the file the object became; when the file a tree holds at the object's path has that
// hash, the plan takes the tree's bytes as they are, and finds them equal. Only what
// changed is serialised. Its settled directories are Plan's own answers too: a directory
// whose plan changed nothing, kept with everything that answer read.
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

// Objects returns the serialiser a plan hands to generator.FileOptions.Marshal: the
// tree's bytes when they are obj serialised, else obj serialised and remembered.
func (g *Gate) Objects(tree Tree) func(path string, obj any) ([]byte, error) {
	if g == nil {
		return nil
	}
	return func(file string, obj any) ([]byte, error) {
		j, err := json.Marshal(obj)
		if err != nil {
			return nil, err
		}
		in := sha256.Sum256(j)
		b, ok := g.held(tree, file, in)
		if !ok {
			if b, err = generator.MarshalObjectJSON(j); err != nil {
				return nil, err
			}
			g.remember(in, b)
		}
		if base := path.Base(file); base == generator.HelmReleaseFile || base == generator.ApplicationFile {
			g.rememberJSON(b, j)
		}
		return b, nil
	}
}

// rememberJSON notes that the deploy file b holds the object whose JSON is j.
func (g *Gate) rememberJSON(b, j []byte) {
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

// Secrets wraps a Secret encoder: a Secret whose plaintext, under the same encoding, is
// what the tree's file already holds keeps that file without being encoded or decrypted
// again. encoding names what the file depends on besides the plaintext (the recipients);
// fileName is the name the encoder gives the file of a base name.
func (g *Gate) Secrets(enc generator.SecretEncoder, encoding string, fileName func(base string) string, dir string, tree Tree) generator.SecretEncoder {
	if g == nil || enc == nil {
		return enc
	}
	return func(s *corev1.Secret, base string) (string, []byte, error) {
		j, err := json.Marshal(s)
		if err != nil {
			return "", nil, err
		}
		h := sha256.New()
		h.Write(j)
		h.Write([]byte("\x00" + encoding))
		var in [sha256.Size]byte
		h.Sum(in[:0])
		name := fileName(base)
		if have, ok := g.held(tree, dir+"/"+name, in); ok {
			return name, have, nil
		}
		name, b, err := enc(s, base)
		if err == nil {
			g.remember(in, b)
		}
		return name, b, err
	}
}

// Record returns the record file to write: the tree's bytes when they hold the same
// record (same says so of two record files), so that a record written in an older
// encoding (YAML) is not rewritten for its encoding alone, else want.
func (g *Gate) Record(tree Tree, path string, want []byte, same func(have, want []byte) bool) ([]byte, error) {
	in := sha256.Sum256(want)
	if have, ok := g.held(tree, path, in); ok {
		return have, nil
	}
	have, ok, err := tree.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if ok && !bytes.Equal(have, want) && !g.wroteRecord(have) && same(have, want) {
		want = have
	}
	g.remember(in, want)
	return want, nil
}

// wroteRecord reports whether the record file have is one the gate remembers writing
// (remember(sha256(b), b) above): a record in the current encoding, which holds another
// event when its bytes are not want's. Each event of a cluster finds the record of the one
// before it, and deciding that by decoding and encoding it again costs a tenth of a plan.
func (g *Gate) wroteRecord(have []byte) bool {
	if g == nil {
		return false
	}
	sum := sha256.Sum256(have)
	g.mu.Lock()
	defer g.mu.Unlock()
	out, ok := g.known[sum]
	return ok && out == sum
}

// held returns the tree's file at path when it is known to hold the input in.
func (g *Gate) held(tree Tree, path string, in [sha256.Size]byte) ([]byte, bool) {
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

// remember notes that the file b holds the input in.
func (g *Gate) remember(in [sha256.Size]byte, b []byte) {
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
