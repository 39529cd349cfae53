package gitrepo_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/gitrepo"
)

// looseDir matches the directories of loose objects in a bare repository.
var looseDir = regexp.MustCompile(`^[0-9a-f]{2}$`)

// objectFiles lists the loose objects and the packs of a bare repository.
func objectFiles(t *testing.T, dir string) (loose, packs []string) {
	t.Helper()
	err := filepath.WalkDir(filepath.Join(dir, "objects"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		switch parent := filepath.Base(filepath.Dir(p)); {
		case looseDir.MatchString(parent):
			loose = append(loose, p)
		case parent == "pack" && filepath.Ext(p) == ".pack":
			packs = append(packs, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return loose, packs
}

// TestPendingObjects: a clone on disk keeps what a batch writes in memory until it pushes,
// and then as the pack it pushed, not as a loose file an object; what is never pushed
// never reaches the disk; a push the remote refused (another writer moved it) leaves its
// pack and the chain committed again lands; the packs of many pushes are merged so that
// a few remain; and the clone reopens, whole, with nothing to heal.
func TestPendingObjects(t *testing.T) {
	t.Parallel()
	s := newGitServer(t)
	cases := []struct {
		name string
		// pushes is the number of single-change batches pushed; then one more change is
		// added and its batch closed without a push.
		pushes int
		// maxPacks bounds the packs the clone holds at the end (the fetched ones and a
		// refused push's included): beyond 32, the small ones are merged.
		maxPacks int
		// moved: another writer pushes before the first push, which the remote refuses.
		moved bool
	}{
		{"one push", 1, 2, false},
		{"a push refused", 1, 4, true},
		{"many pushes", 100, 32, false},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			name := fmt.Sprintf("pending-%d", i)
			o := testOptions(s.newRepo(name, true))
			o.CacheDir = t.TempDir()
			var warnings []string
			o.Warn = func(msg string) { warnings = append(warnings, msg) }
			r := open(t, o)
			ctx := context.Background()
			want := map[string]string{}
			if tc.moved {
				work := t.TempDir()
				git(t, "", "clone", "-q", s.dir(name), work)
				if err := os.WriteFile(filepath.Join(work, "other.yaml"), []byte("another writer\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				git(t, work, "add", "other.yaml")
				git(t, work, "commit", "-q", "-m", "another writer")
				git(t, work, "push", "-q", "origin", "HEAD:main")
				want["other.yaml"] = "another writer\n"
			}
			for n := range tc.pushes {
				// Each push is two commits that rewrite a shared file (the second version a
				// delta against the first in the push's pack, and so in the merged ones)
				// and add one each.
				var planned []gitrepo.Planned
				for k := range 2 {
					files := map[string]string{"c/shared.yaml": fmt.Sprintf("shared %d.%d\n%s", n, k, filler), fmt.Sprintf("c/%03d-%d.yaml", n, k): fmt.Sprint(n, k)}
					planned = append(planned, static(change(fmt.Sprintf("push %d, change %d", n, k), files)))
					for p, c := range files {
						want[p] = c
					}
				}
				res, err := applyGroup(ctx, r, planned)
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range res {
					if c.Err != nil || c.NoOp {
						t.Fatalf("push %d: %v (no-op %t)", n, c.Err, c.NoOp)
					}
				}
			}
			loose, packs := objectFiles(t, o.CacheDir)
			if len(loose) != 0 {
				t.Errorf("%d loose objects after %d pushes, want none: %v", len(loose), tc.pushes, loose[:min(3, len(loose))])
			}
			if len(packs) > tc.maxPacks {
				t.Errorf("%d packs after %d pushes, want at most %d", len(packs), tc.pushes, tc.maxPacks)
			}

			b, err := r.Begin(ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := b.Add(ctx, static(change("not pushed", map[string]string{"c/unpushed.yaml": "never"}))); err != nil {
				t.Fatal(err)
			}
			b.Close()
			if l, p := objectFiles(t, o.CacheDir); len(l) != 0 || len(p) != len(packs) {
				t.Errorf("a batch closed unpushed left %d loose objects and %d packs (had %d)", len(l), len(p), len(packs))
			}

			r2 := open(t, o)
			for _, repo := range []*gitrepo.Repo{r, r2} {
				for p, c := range want {
					if got, ok, err := repo.ReadFile(p); err != nil || !ok || string(got) != c {
						t.Errorf("ReadFile(%s) = %q, %t, %v; want %q", p, got, ok, err, c)
					}
				}
				if _, ok, err := repo.ReadFile("c/unpushed.yaml"); ok || err != nil {
					t.Errorf("ReadFile(c/unpushed.yaml): found %t, %v; want absent", ok, err)
				}
			}
			if len(warnings) != 0 {
				t.Errorf("warnings: %q", warnings)
			}
			git(t, o.CacheDir, "fsck", "--strict", "--no-dangling")
			_, packs = objectFiles(t, o.CacheDir)
			for _, p := range packs {
				git(t, o.CacheDir, "verify-pack", strings.TrimSuffix(p, ".pack")+".idx")
			}
			onlyFastForwards(t, s.dir(name), "main")
		})
	}
}

// filler makes the shared file large enough for its versions to be packed as deltas.
var filler = func() string {
	b := make([]byte, 0, 4096)
	for i := 0; len(b) < 4000; i++ {
		b = fmt.Appendf(b, "line %d of the shared file\n", i)
	}
	return string(b)
}()
