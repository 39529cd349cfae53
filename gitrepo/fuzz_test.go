package gitrepo

import (
	"bytes"
	"errors"
	"path"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/memory"
)

// Realistic seeds: the paths the generator writes, and the spellings that must be refused.
var fuzzSeeds = []string{
	"clusters/magnum/magnum-p1/prod-a-2b7x/helmrelease.yaml\nclusters/magnum/magnum-p1/prod-a-2b7x/kustomization.yaml\nclusters/magnum/magnum-p1/namespace.yaml",
	"clusters/magnum/magnum-p1/prod-a-2b7x/secret-ca.sops.yaml\n---\n-clusters/magnum/magnum-p1/prod-a-2b7x/secret-ca.sops.yaml",
	"clusters/magnum/magnum-p2/c/helmrelease.yaml\nclusters/magnum/magnum-p2/c-d/x\nclusters/magnum/magnum-p2/c.d\n---\nclusters/magnum/magnum-p2/c/z",
	"a\n---\na/b", "a/b\n---\na", "a/b\n---\n-a", "a/b\n---\n-a/b/c",
	".git/config", "a/.GIT/x", "git~1/x", ".git /x", ".g\u200cit/hooks/x", ".gitmodules", "GITMOD~1", ".gitattributes.",
	"a//b", "./a", "a/../b", "a\\b", "c:x", "a\x00b",
}

// FuzzValidPath checks ValidPath against an independent oracle: an accepted path is clean,
// relative, valid UTF-8 without control characters or backslashes, and no segment folds to
// .git, .gitmodules or .gitattributes once HFS+-ignored code points and NTFS-dropped
// trailing spaces and periods are removed.
func FuzzValidPath(f *testing.F) {
	for _, s := range fuzzSeeds {
		for _, p := range strings.Split(s, "\n") {
			f.Add(strings.TrimPrefix(p, "-"))
		}
	}
	f.Fuzz(func(t *testing.T, p string) {
		if ValidPath(p) != nil {
			return
		}
		if p == "" || path.Clean(p) != p || strings.HasPrefix(p, "/") || !utf8.ValidString(p) || strings.ContainsAny(p, "\\\x00\n\r") {
			t.Fatalf("ValidPath accepted %q", p)
		}
		for _, seg := range strings.Split(p, "/") {
			folded := strings.Map(func(r rune) rune {
				if hfsIgnorable(r) {
					return -1
				}
				return r
			}, seg)
			folded = strings.ToLower(strings.TrimRight(folded, " ."))
			if i := strings.IndexByte(folded, ':'); i >= 0 {
				folded = strings.TrimRight(folded[:i], " .")
			}
			switch folded {
			case ".git", "git~1", ".gitmodules", ".gitattributes", "gitmod~1", "gitatt~1", "..", ".", "":
				t.Fatalf("ValidPath accepted %q (segment %q)", p, seg)
			}
		}
	})
}

// FuzzTreeBuilder applies rounds of changes ("path" writes, "-path" deletes, "---"
// between rounds) with the tree builder and checks the result against a map model: every
// tree is sorted, has no duplicate, no empty subtree and no name git fsck --strict would
// refuse; every file reads back; and a change the model says must fail (a path that is a
// directory, or goes through a file) fails with ErrInvalidChange, leaving the tree alone.
func FuzzTreeBuilder(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s, []byte("kind: HelmRelease\n"))
	}
	f.Add("x/y\nx/z\n---\n-x/y\n-x/z", []byte{})
	f.Fuzz(func(t *testing.T, script string, content []byte) {
		if len(script) > 1024 || strings.Count(script, "\n---\n") > 8 {
			return // bigger inputs find nothing new, only slow the search down
		}
		st := memory.NewStorage()
		model := map[string][]byte{}
		var tree plumbing.Hash
		for round, part := range strings.Split(script, "\n---\n") {
			c := Change{Subject: "round", Files: map[string][]byte{}}
			for i, line := range strings.Split(part, "\n") {
				if p, ok := strings.CutPrefix(line, "-"); ok {
					c.Files[p] = nil
				} else {
					c.Files[line] = append(append([]byte{}, content...), byte(round), byte(i))
				}
			}
			if c.validate() != nil {
				continue // ValidPath and the change's own rules are FuzzValidPath's business
			}
			wantErr := modelRefuses(model, c.Files)
			b := &treeBuilder{s: st}
			next, err := b.apply(tree, c.Files)
			if wantErr != (err != nil) {
				t.Fatalf("round %d %q: err = %v, model says refused = %v", round, part, err, wantErr)
			}
			if err != nil {
				if !errors.Is(err, ErrInvalidChange) {
					t.Fatalf("round %d: %v does not wrap ErrInvalidChange", round, err)
				}
				continue
			}
			for p, v := range c.Files {
				if v == nil {
					delete(model, p)
				} else {
					model[p] = v
				}
			}
			tree = next
			checkTree(t, st, tree, model)
		}
	})
}

// modelRefuses says whether the builder must refuse files on the model's tree.
func modelRefuses(model map[string][]byte, files map[string][]byte) bool {
	for p, v := range files {
		for q := range model {
			if strings.HasPrefix(q, p+"/") {
				return true // p is a directory
			}
			if v != nil && strings.HasPrefix(p, q+"/") {
				return true // p goes through a file
			}
		}
	}
	return false
}

// checkTree walks tree and compares it with the model.
func checkTree(t *testing.T, st *memory.Storage, tree plumbing.Hash, model map[string][]byte) {
	t.Helper()
	got := map[string]bool{}
	var walk func(h plumbing.Hash, prefix string)
	walk = func(h plumbing.Hash, prefix string) {
		tr, err := object.GetTree(st, h)
		if err != nil {
			t.Fatal(err)
		}
		if len(tr.Entries) == 0 {
			t.Fatalf("empty tree at %q", prefix)
		}
		keys := make([]string, len(tr.Entries))
		for i, e := range tr.Entries {
			if err := validName(e.Name); err != nil {
				t.Fatalf("tree entry %q: %v", prefix+e.Name, err)
			}
			keys[i] = entryKey(e)
			if e.Mode == filemode.Dir {
				walk(e.Hash, prefix+e.Name+"/")
			} else {
				got[prefix+e.Name] = true
			}
		}
		if !sort.StringsAreSorted(keys) {
			t.Fatalf("tree %q not in Git order: %q", prefix, keys)
		}
		for i := 1; i < len(tr.Entries); i++ {
			if tr.Entries[i].Name == tr.Entries[i-1].Name {
				t.Fatalf("duplicate entry %q", prefix+tr.Entries[i].Name)
			}
		}
	}
	if tree.IsZero() {
		if len(model) > 0 {
			t.Fatalf("empty tree, model has %d files", len(model))
		}
		return
	}
	walk(tree, "")
	if len(got) != len(model) {
		t.Fatalf("tree has %d files, model %d", len(got), len(model))
	}
	for p, want := range model {
		data, ok, err := readPath(st, tree, p)
		if err != nil || !ok || !bytes.Equal(data, want) {
			t.Fatalf("%q = %q %v %v, want %q", p, data, ok, err, want)
		}
	}
}

// entryKey is the name a tree entry sorts by in Git: a directory's name ends in "/".
func entryKey(e object.TreeEntry) string {
	if e.Mode == filemode.Dir {
		return e.Name + "/"
	}
	return e.Name
}
