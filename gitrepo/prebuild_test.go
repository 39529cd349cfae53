package gitrepo_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/magnum-gitops/magnum-gitops/gitrepo"
)

// TestApplyGroupBuildsAhead: the builders of a group are built side by side on the branch
// head, and a change built there is kept only when nothing committed before it in the
// chain changed what its builder read. Independent builders are called once, though each
// also writes a shared file that every one reads, with the content it has; each builder
// that appends to a shared log is called again on the chain's tip, so the log holds every
// line in order.
func TestApplyGroupBuildsAhead(t *testing.T) {
	t.Parallel()
	s := newGitServer(t)
	url := s.newRepo("ahead", true)
	bare := s.dir("ahead")
	r := open(t, testOptions(url))
	ctx := context.Background()
	if _, err := r.Apply(ctx, change("shared", map[string]string{"shared.yaml": "same\n"})); err != nil {
		t.Fatal(err)
	}
	const n = 24
	calls := make([]atomic.Int32, n)
	builders := make([]gitrepo.Builder, n)
	var want strings.Builder
	for i := range n {
		if i%3 == 2 {
			// Appends to the shared log: reads it, so sees the appenders before it.
			fmt.Fprintf(&want, "line %d\n", i)
			builders[i] = func(base gitrepo.Tree) (gitrepo.Change, error) {
				calls[i].Add(1)
				log, _, err := base.ReadFile("log.txt")
				if err != nil {
					return gitrepo.Change{}, err
				}
				return change(fmt.Sprintf("append %d", i), map[string]string{"log.txt": fmt.Sprintf("%sline %d\n", log, i)}), nil
			}
			continue
		}
		// Writes a file of its own after listing its directory (nothing before it in the
		// chain writes there), and the shared file as it is.
		builders[i] = func(base gitrepo.Tree) (gitrepo.Change, error) {
			calls[i].Add(1)
			dir := fmt.Sprintf("d/%02d", i)
			if names, err := base.ListDir(dir); err != nil || len(names) != 0 {
				return gitrepo.Change{}, fmt.Errorf("%s: %v %v", dir, names, err)
			}
			shared, _, err := base.ReadFile("shared.yaml")
			if err != nil {
				return gitrepo.Change{}, err
			}
			return change(fmt.Sprintf("own %d", i), map[string]string{dir + "/f.yaml": fmt.Sprintf("i: %d\n", i), "shared.yaml": string(shared)}), nil
		}
	}
	res, err := r.ApplyGroup(ctx, builders)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if res[i].Err != nil || res[i].NoOp {
			t.Errorf("builder %d: %+v", i, res[i])
		}
		want := int32(1)
		if i%3 == 2 && i > 2 {
			want = 2 // its log was written by the appender before it
		}
		if got := calls[i].Load(); got != want {
			t.Errorf("builder %d called %d times, want %d", i, got, want)
		}
	}
	if got, _ := fileAt(t, bare, "main", "log.txt"); string(got) != want.String() {
		t.Errorf("log.txt =\n%s\nwant\n%s", got, want.String())
	}
	if got, _ := fileAt(t, bare, "main", "d/22/f.yaml"); string(got) != "i: 22\n" {
		t.Errorf("d/22/f.yaml = %q", got)
	}
	checkRepo(t, bare)
	onlyFastForwards(t, bare, "main")
}

// TestApplyGroupStopsBuildingAhead: when a group stops part way (here its context is
// cancelled by one of its builders), ApplyGroup returns only once no builder runs any
// more, and pushes nothing.
func TestApplyGroupStopsBuildingAhead(t *testing.T) {
	t.Parallel()
	s := newGitServer(t)
	r := open(t, testOptions(s.newRepo("stop", true)))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var active, calls atomic.Int32
	builders := make([]gitrepo.Builder, 40)
	for i := range builders {
		builders[i] = func(gitrepo.Tree) (gitrepo.Change, error) {
			active.Add(1)
			defer active.Add(-1)
			calls.Add(1)
			if i == 1 {
				cancel()
			}
			time.Sleep(2 * time.Millisecond) // long enough for the builders to overlap
			return change(fmt.Sprintf("c %d", i), map[string]string{fmt.Sprintf("f/%d", i): "x"}), nil
		}
	}
	pushes := s.pushes.Load()
	_, err := r.ApplyGroup(ctx, builders)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if n := active.Load(); n != 0 {
		t.Errorf("%d builders still running after ApplyGroup returned", n)
	}
	if n := calls.Load(); n == int32(len(builders)) {
		t.Errorf("all %d builders ran although the group stopped at the second", n)
	}
	if s.pushes.Load() != pushes {
		t.Error("a cancelled group pushed")
	}
}
