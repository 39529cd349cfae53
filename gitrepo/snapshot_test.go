package gitrepo_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/magnum-gitops/magnum-gitops/gitrepo"
)

// TestSnapshot: a snapshot keeps reading its commit while the branch moves on; empty
// files exist; directories list their files only.
func TestSnapshot(t *testing.T) {
	t.Parallel()
	s := newGitServer(t)
	r := open(t, testOptions(s.newRepo("snap", true)))
	ctx := context.Background()
	if _, err := r.Apply(ctx, change("v1", map[string]string{"c/a.yaml": "1", "c/empty": "", "c/sub/b.yaml": "b", "c-d/x": "x"})); err != nil {
		t.Fatal(err)
	}
	snap, err := r.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	head, _ := r.Head()
	if snap.Commit() != head {
		t.Errorf("snapshot at %s, head %s", snap.Commit(), head)
	}
	if _, err := r.Apply(ctx, change("v2", map[string]string{"c/a.yaml": "2", "c/empty": "<delete>"})); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		tree      gitrepo.Tree
		path      string
		want      string
		wantFound bool
	}{
		{snap, "c/a.yaml", "1", true},
		{snap, "c/empty", "", true},
		{snap, "c/sub", "", false},
		{snap, "c/a.yaml/x", "", false},
		{snap, "../c/a.yaml", "", false},
		{r, "c/a.yaml", "2", true},
		{r, "c/empty", "", false},
		{r, "c-d/x", "x", true},
	} {
		got, ok, err := tc.tree.ReadFile(tc.path)
		if err != nil || ok != tc.wantFound || string(got) != tc.want {
			t.Errorf("ReadFile(%q) = %q %v %v, want %q %v", tc.path, got, ok, err, tc.want, tc.wantFound)
		}
	}
	if got, err := snap.ListDir("c"); err != nil {
		t.Errorf("ListDir(c) = %v %v", got, err)
	} else if diff := cmp.Diff([]string{"a.yaml", "empty"}, got); diff != "" {
		t.Errorf("ListDir(c) (-want +got):\n%s", diff)
	}
	if got, err := snap.ListDir("nope"); err != nil || got != nil {
		t.Errorf("ListDir(nope) = %v %v", got, err)
	}
	if got, err := snap.ListFiles("."); err != nil {
		t.Errorf("ListFiles(.) = %v %v", got, err)
	} else if diff := cmp.Diff([]string{"README.md", "c-d/x", "c/a.yaml", "c/empty", "c/sub/b.yaml"}, got); diff != "" {
		t.Errorf("ListFiles(.) (-want +got):\n%s", diff)
	}
	if got, err := r.ListFiles("c"); err != nil {
		t.Errorf("ListFiles(c) = %v %v", got, err)
	} else if diff := cmp.Diff([]string{"c/a.yaml", "c/sub/b.yaml"}, got); diff != "" {
		t.Errorf("ListFiles(c) (-want +got):\n%s", diff)
	}
}

// TestReadersDuringWrites runs readers against a Repo that is committing groups; run with
// -race it checks readers and writers share the object store safely.
func TestReadersDuringWrites(t *testing.T) {
	t.Parallel()
	s := newGitServer(t)
	o := testOptions(s.newRepo("readers", true))
	o.CacheDir = t.TempDir() // the on-disk store is the less forgiving one
	r := open(t, o)
	ctx := context.Background()
	done := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				if _, _, err := r.ReadFile("README.md"); err != nil {
					t.Error(err)
					return
				}
				if _, err := r.ListFiles("c"); err != nil {
					t.Error(err)
					return
				}
				if err := r.Walk(ctx, func(gitrepo.CommitInfo) error { return gitrepo.ErrStopWalk }); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for g := 0; g < 5; g++ {
		var bs []gitrepo.Planned
		for i := 0; i < 5; i++ {
			path := fmt.Sprintf("c/%d/%d.yaml", g, i)
			base, err := r.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			on := base.Recording()
			if _, _, err := on.ReadFile(path); err != nil {
				t.Fatal(err)
			}
			bs = append(bs, gitrepo.Planned{Change: change(path, map[string]string{path: "x"}), On: on})
		}
		if _, err := applyGroup(ctx, r, bs); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	wg.Wait()
	if files, _ := r.ListFiles("c"); len(files) != 25 {
		t.Errorf("%d files, want 25", len(files))
	}
}
