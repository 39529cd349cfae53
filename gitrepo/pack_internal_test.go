package gitrepo

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/storage/memory"
)

// chain commits changes one after another on a fresh in-memory repository and returns it
// with the tip and, per commit, the objects it wrote in the order a push gathers them.
func chain(t testing.TB, changes []map[string][]byte) (*Repo, plumbing.Hash, [][]newObject) {
	t.Helper()
	r := &Repo{store: memory.NewStorage(), opts: Options{
		Author: Signature{Name: "p", Email: "p@example.org"},
		Now:    func() time.Time { return time.Unix(1700000000, 0) },
	}}
	var tip, tree plumbing.Hash
	var objects [][]newObject
	for i, c := range changes {
		b := &treeBuilder{s: r.store}
		var err error
		if tree, err = b.apply(tree, c); err != nil {
			t.Fatal(err)
		}
		if tip, err = r.commit(b, tree, tip, "change "+strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
		objects = append(objects, b.created)
	}
	return r, tip, objects
}

// wideChanges is a repository of one wide directory (400 entries, a tree of ~16 KB, like
// the namespace list of a large repository) and a large file, then n commits that each
// change one entry of the directory and one line of the file, and one commit that writes
// a file whose content an earlier commit already wrote.
func wideChanges(n int) []map[string][]byte {
	seed := map[string][]byte{}
	for i := range 400 {
		seed[fmt.Sprintf("wide/ns-%03d/release.yaml", i)] = fmt.Appendf(nil, "ns: %d\n", i)
	}
	var big bytes.Buffer
	for i := range 60 {
		fmt.Fprintf(&big, "line %02d: some values of the chart\n", i)
	}
	seed["big.yaml"] = big.Bytes()
	changes := []map[string][]byte{seed}
	for i := range n {
		changes = append(changes, map[string][]byte{
			fmt.Sprintf("wide/ns-%03d/release.yaml", i*7%400): fmt.Appendf(nil, "ns: %d\nrev: %d\n", i*7%400, i),
			"big.yaml": append(bytes.Clone(big.Bytes()), fmt.Appendf(nil, "rev %d\n", i)...),
		})
	}
	return append(changes, map[string][]byte{"copy/release.yaml": []byte("ns: 0\n")})
}

// randomChanges is n commits of random edits to 24 files in 3 directories: contents from
// empty to 3 KB, most of them small edits of the file's previous content, some deletes.
func randomChanges(seed uint64, n int) []map[string][]byte {
	r := rand.New(rand.NewPCG(seed, 1))
	files := map[string][]byte{}
	var changes []map[string][]byte
	for range n {
		c := map[string][]byte{}
		for range 1 + r.IntN(4) {
			p := fmt.Sprintf("d%d/f%02d.yaml", r.IntN(3), r.IntN(8))
			switch old, ok := files[p]; {
			case ok && r.IntN(6) == 0:
				c[p] = nil
				delete(files, p)
				continue
			case ok && len(old) > 0 && r.IntN(3) > 0:
				edit := bytes.Clone(old)
				edit[r.IntN(len(edit))] = byte('a' + r.IntN(26))
				c[p] = append(edit, fmt.Appendf(nil, "# %d\n", r.Int())...)
			default:
				b := make([]byte, r.IntN(3000))
				for i := range b {
					b[i] = byte('a' + r.IntN(4))
				}
				c[p] = b
			}
			files[p] = c[p]
		}
		if len(files) == 0 {
			c["keep"] = []byte("a file, so that no commit is empty\n")
			files["keep"] = c["keep"]
		}
		changes = append(changes, c)
	}
	return changes
}

// TestWritePack: the pack of a chain of commits is accepted by git index-pack --strict
// and git fsck --strict, holds every object the chain wrote exactly once, every delta one
// step from its base; the later versions of a wide tree and of a large file are deltas.
// Packing it a commit at a time on a goroutine gives the same bytes.
func TestWritePack(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		changes []map[string][]byte
		// deltas is the least number of delta entries per object type.
		deltas map[string]int
	}{
		{"wide tree and large file", wideChanges(30), map[string]int{"tree": 30, "blob": 30}},
		{"random edits", randomChanges(1, 60), map[string]int{"blob": 1}},
		{"random edits 2", randomChanges(2, 60), map[string]int{"blob": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, tip, commits := chain(t, tc.changes)
			objects := slices.Concat(commits...)
			var pack bytes.Buffer
			if err := writePack(&pack, objects); err != nil {
				t.Fatal(err)
			}
			// Packed on a goroutine a commit at a time, as a chain is built: the same bytes.
			k := startPacking()
			for _, c := range commits {
				k.add(c)
			}
			if streamed, n := k.finish(); !bytes.Equal(streamed, pack.Bytes()) {
				t.Errorf("packed a commit at a time: %d objects, %d bytes; at once: %d bytes", n, len(streamed), pack.Len())
			}
			want := map[string]bool{}
			for _, o := range objects {
				want[o.hash.String()] = true
			}
			deltas := checkPack(t, pack.Bytes(), tip, want)
			for typ, n := range tc.deltas {
				if deltas[typ] < n {
					t.Errorf("%d %s deltas, want at least %d (all: %v)", deltas[typ], typ, n, deltas)
				}
			}
		})
	}
}

// checkPack indexes pack with git in a new repository whose main branch is tip, checks it
// with git fsck --strict and that it holds exactly the objects in want with deltas of
// depth 1, and returns the number of delta entries per object type.
func checkPack(t *testing.T, pack []byte, tip plumbing.Hash, want map[string]bool) map[string]int {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "r.git")
	run := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	if out, err := exec.Command("git", "init", "-q", "--bare", dir).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	file := filepath.Join(dir, "objects", "pack", "pack-test.pack")
	if err := os.WriteFile(file, pack, 0o644); err != nil {
		t.Fatal(err)
	}
	run("index-pack", "--strict", file)
	run("update-ref", "refs/heads/main", tip.String())
	run("fsck", "--strict", "--no-dangling", "--no-progress")

	// git verify-pack -v: "hash type size size-in-pack offset [depth base]" per object.
	deltas := map[string]int{}
	seen := map[string]bool{}
	for _, line := range strings.Split(run("verify-pack", "-v", strings.TrimSuffix(file, ".pack")+".idx"), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 || len(f[0]) != 40 {
			continue
		}
		if seen[f[0]] || !want[f[0]] {
			t.Errorf("object %s: in the pack twice or not written by the chain", f[0])
		}
		seen[f[0]] = true
		if len(f) == 7 {
			if f[5] != "1" {
				t.Errorf("object %s: delta depth %s, want 1", f[0], f[5])
			}
			deltas[f[1]]++
		}
	}
	if len(seen) != len(want) {
		t.Errorf("%d objects in the pack, want %d", len(seen), len(want))
	}
	return deltas
}

// BenchmarkPack packs a group of 60 commits to a 10,000-cluster repository (500 namespace
// directories of 20 clusters of 4 files), each changing 3 files of one cluster: go-git's
// encoder with a window of 10 (and 0) beside writePack, in the same run.
func BenchmarkPack(b *testing.B) {
	seed := map[string][]byte{}
	for i := range 10000 {
		for _, f := range []string{"helmrelease.yaml", "kustomization.yaml", "magnum-cluster.yaml", "secret-ca.yaml"} {
			seed[fmt.Sprintf("clusters/magnum/magnum-p%03d/c%05d/%s", i%500, i, f)] = fmt.Appendf(nil, "# %s of cluster %d\nkind: Example\nspec:\n  replicas: 3\n", f, i)
		}
	}
	changes := []map[string][]byte{seed}
	for i := range 60 {
		dir := fmt.Sprintf("clusters/magnum/magnum-p%03d/c%05d/", (i*151)%500, (i*151)%10000)
		changes = append(changes, map[string][]byte{
			dir + "helmrelease.yaml":    fmt.Appendf(nil, "kind: HelmRelease\nspec:\n  replicas: %d\n", i+4),
			dir + "magnum-cluster.yaml": fmt.Appendf(nil, "node_count: %d\n", i),
			dir + "secret-extra.yaml":   fmt.Appendf(nil, "rev: %d\n", i),
		})
	}
	r, _, commits := chain(b, changes)
	group := slices.Concat(commits[1:]...) // without the seed
	hashes := make([]plumbing.Hash, len(group))
	for i, o := range group {
		hashes[i] = o.hash
	}
	for _, window := range []uint{0, 10} {
		b.Run(fmt.Sprintf("go-git/window=%d", window), func(b *testing.B) {
			var pack bytes.Buffer
			for b.Loop() {
				pack.Reset()
				if _, err := packfile.NewEncoder(&pack, r.store, false).Encode(hashes, window); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(pack.Len()), "pack-bytes")
		})
	}
	b.Run("writePack", func(b *testing.B) {
		var pack bytes.Buffer
		for b.Loop() {
			pack.Reset()
			if err := writePack(&pack, group); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(pack.Len()), "pack-bytes")
	})
}

// writePack writes a pack of objects to w, as the push does (see packer).
func writePack(w io.Writer, objects []newObject) error {
	p := newPacker()
	p.add(objects)
	_, err := w.Write(p.bytes())
	return err
}
