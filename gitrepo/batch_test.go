package gitrepo_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/gitrepo"
)

// static is a change planned on nothing: it holds on every commit.
func static(c gitrepo.Change) gitrepo.Planned { return gitrepo.Planned{Change: c} }

// applyGroup commits planned changes as one Batch to the configured branch and pushes
// them as they are: what goes stale on a moved remote is left out with ErrStale.
func applyGroup(ctx context.Context, r *gitrepo.Repo, planned []gitrepo.Planned) ([]gitrepo.ChangeResult, error) {
	b, err := r.Begin(ctx, "")
	if err != nil {
		return nil, err
	}
	defer b.Close()
	ids, err := b.Add(ctx, planned...)
	if err != nil {
		return nil, err
	}
	for {
		stale, err := b.Push(ctx)
		if err != nil {
			return nil, err
		}
		if len(stale) == 0 {
			break
		}
	}
	out := make([]gitrepo.ChangeResult, len(ids))
	for i, id := range ids {
		out[i] = b.Result(id)
	}
	return out, nil
}

// applyPlanned is applyGroup for one change, with its own error.
func applyPlanned(ctx context.Context, r *gitrepo.Repo, p gitrepo.Planned) (*gitrepo.Result, error) {
	res, err := applyGroup(ctx, r, []gitrepo.Planned{p})
	if err != nil {
		return &gitrepo.Result{}, err
	}
	return &res[0].Result, res[0].Err
}

// TestApplyGroup: a Batch makes one commit per change, chained, one push for all; a no-op
// makes no commit; an invalid, review or conflicting change is left out with its own error
// and the rest land.
func TestApplyGroup(t *testing.T) {
	t.Parallel()
	s := newGitServer(t)
	url := s.newRepo("group", true)
	bare := s.dir("group")
	ctx := context.Background()
	r := open(t, testOptions(url))
	if _, err := r.Apply(ctx, change("owned", map[string]string{"c/owned.yaml": "v: 1\n"})); err != nil {
		t.Fatal(err)
	}
	stale := open(t, testOptions(url)) // sees c/owned.yaml v1
	// A human changes the file after stale's clone.
	work := t.TempDir()
	git(t, "", "clone", "-q", bare, work)
	os.WriteFile(filepath.Join(work, "c/owned.yaml"), []byte("v: human\n"), 0o644)
	git(t, work, "commit", "-q", "-am", "human edit")
	git(t, work, "push", "-q", "origin", "HEAD:main")

	review := change("review", map[string]string{"c/r.yaml": "r"})
	review.Branch = "review/x"
	planned := []gitrepo.Planned{
		static(change("first", map[string]string{"c/a.yaml": "a\n"})),
		static(change("no-op", map[string]string{"README.md": "# clusters\n"})),
		static(change("conflict", map[string]string{"c/owned.yaml": "v: 2\n"})),
		static(change("bad path", map[string]string{"c/.gitmodules": "x"})),
		static(review),
		static(change("last", map[string]string{"c/a.yaml": "a2\n", "c/z.yaml": "z\n"})),
	}
	pushes := s.pushes.Load()
	res, err := applyGroup(ctx, stale, planned)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.pushes.Load() - pushes; got != 1 {
		// The first attempt stops at the remote's advertisement (stale's clone predates
		// the human edit) before sending anything; the chain built again is one push.
		t.Errorf("%d pushes, want 1 for the whole group", got)
	}
	wantErr := []error{nil, nil, gitrepo.ErrConflict, gitrepo.ErrInvalidChange, gitrepo.ErrInvalidChange, nil}
	for i, w := range wantErr {
		if w == nil && res[i].Err != nil || w != nil && !errors.Is(res[i].Err, w) {
			t.Errorf("change %d: err = %v, want %v", i, res[i].Err, w)
		}
	}
	if !res[1].NoOp || !res[1].Commit.IsZero() {
		t.Errorf("change 1, a no-op: %+v", res[1])
	}
	for _, i := range []int{0, 5} {
		if res[i].Commit.IsZero() || res[i].NoOp || res[i].Branch != "main" || res[i].Attempts != 2 {
			t.Errorf("change %d: %+v", i, res[i])
		}
	}
	clone := checkRepo(t, bare)
	log := git(t, clone, "log", "--format=%H %s")
	want := fmt.Sprintf("%s last\n%s first\n", res[5].Commit, res[0].Commit)
	if !strings.HasPrefix(log, want) {
		t.Errorf("history:\n%s\nwant it to start with:\n%s", log, want)
	}
	if got, _ := fileAt(t, bare, "main", "c/owned.yaml"); string(got) != "v: human\n" {
		t.Errorf("the human's edit was overwritten: %q", got)
	}
	if out := git(t, bare, "branch", "--list", "review/x"); out != "" {
		t.Error("a group created a review branch")
	}
	onlyFastForwards(t, bare, "main")

	// Everything a no-op: no push at all.
	pushes = s.pushes.Load()
	res, err = applyGroup(ctx, stale, []gitrepo.Planned{static(change("again", map[string]string{"c/z.yaml": "z\n"}))})
	if err != nil || !res[0].NoOp || s.pushes.Load() != pushes {
		t.Errorf("a group of no-ops: %+v %v, %d pushes", res, err, s.pushes.Load()-pushes)
	}
}

// TestApplyGroupFailsAsAWhole: a group that cannot be pushed returns one error and pushes
// nothing.
func TestApplyGroupFailsAsAWhole(t *testing.T) {
	t.Parallel()
	s := newGitServer(t)
	o := testOptions(s.newRepo("group-gone", true))
	o.MaxAttempts = 2
	r := open(t, o)
	s.stop()
	res, err := applyGroup(context.Background(), r, []gitrepo.Planned{static(change("x", map[string]string{"a": "1"}))})
	if !errors.Is(err, gitrepo.ErrTooManyAttempts) || res != nil {
		t.Errorf("server gone: %v %v, want ErrTooManyAttempts", res, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := applyGroup(ctx, r, []gitrepo.Planned{static(change("x", map[string]string{"a": "1"}))}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// TestConcurrentGroups: three Repos push three groups each at the same time to one git
// http-backend. Every commit lands exactly once, the history is linear, and the remote
// passes git fsck --strict.
func TestConcurrentGroups(t *testing.T) {
	t.Parallel()
	s := newGitServer(t)
	url := s.newRepo("groups", true)
	ctx := context.Background()
	const writers, groups, size = 3, 3, 10
	var wg sync.WaitGroup
	commits := make([][]gitrepo.ChangeResult, writers)
	errs := make([]error, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			r, err := gitrepo.Open(ctx, contendedOptions(url))
			if err != nil {
				errs[w] = err
				return
			}
			for g := 0; g < groups; g++ {
				var bs []gitrepo.Planned
				for i := 0; i < size; i++ {
					c := change(fmt.Sprintf("w%d g%d c%d", w, g, i), map[string]string{
						fmt.Sprintf("clusters/w%d/g%d/c%d.yaml", w, g, i): fmt.Sprintf("n: %d\n", i)})
					c.Trailers = []gitrepo.Trailer{{Key: "Magnum-Event-ID", Value: fmt.Sprintf("w%d-g%d-c%d", w, g, i)}}
					bs = append(bs, static(c))
				}
				res, err := applyGroup(ctx, r, bs)
				if err != nil {
					errs[w] = err
					return
				}
				commits[w] = append(commits[w], res...)
			}
		}(w)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	bare := s.dir("groups")
	clone := checkRepo(t, bare)
	if merges := git(t, clone, "rev-list", "--min-parents=2", "HEAD"); merges != "" {
		t.Errorf("merge commits in the history:\n%s", merges)
	}
	history := map[string]int{}
	for _, h := range strings.Fields(git(t, clone, "rev-list", "HEAD")) {
		history[h]++
	}
	subjects := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(git(t, clone, "log", "--format=%s")), "\n") {
		subjects[l]++
	}
	for w, rs := range commits {
		if len(rs) != groups*size {
			t.Errorf("writer %d: %d results", w, len(rs))
		}
		for _, r := range rs {
			if r.Err != nil || r.Commit.IsZero() || history[r.Commit.String()] != 1 {
				t.Errorf("writer %d: %+v not in the history once", w, r)
			}
		}
	}
	for w := 0; w < writers; w++ {
		for g := 0; g < groups; g++ {
			for i := 0; i < size; i++ {
				if n := subjects[fmt.Sprintf("w%d g%d c%d", w, g, i)]; n != 1 {
					t.Errorf("w%d g%d c%d landed %d times", w, g, i, n)
				}
			}
		}
	}
	onlyFastForwards(t, bare, "main")
}
