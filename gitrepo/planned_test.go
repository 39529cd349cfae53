package gitrepo_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/gitrepo"
)

// planner plans a change on the tree it is given.
type planner func(gitrepo.Tree) (gitrepo.Change, error)

// applyPlans does what a writer does with a Batch: it plans every change on the tip,
// adds them, plans again on the new tip those that went stale, and pushes, planning again
// what went stale on a moved remote. It returns the results, how many times each planner
// ran, and the rounds of planning.
func applyPlans(ctx context.Context, r *gitrepo.Repo, plans []planner) (res []gitrepo.ChangeResult, calls []int, rounds int, err error) {
	b, err := r.Begin(ctx, "")
	if err != nil {
		return nil, nil, 0, err
	}
	defer b.Close()
	calls, ids, owner := make([]int, len(plans)), make([]int, len(plans)), map[int]int{}
	pending := make([]int, len(plans))
	for i := range pending {
		pending[i] = i
	}
	for len(pending) > 0 {
		if rounds++; rounds > len(plans)+1 {
			return nil, nil, rounds, errors.New("the plans never hold")
		}
		planned := make([]gitrepo.Planned, len(pending))
		for k, i := range pending {
			on := b.Tip().Recording()
			calls[i]++
			c, err := plans[i](on)
			if err != nil {
				return nil, nil, rounds, err
			}
			planned[k] = gitrepo.Planned{Change: c, On: on}
		}
		added, err := b.Add(ctx, planned...)
		if err != nil {
			return nil, nil, rounds, err
		}
		var stale []int
		for k, i := range pending {
			ids[i], owner[added[k]] = added[k], i
			if errors.Is(b.Result(added[k]).Err, gitrepo.ErrStale) {
				stale = append(stale, i)
			}
		}
		if pending = stale; len(pending) > 0 {
			continue
		}
		moved, err := b.Push(ctx)
		if err != nil {
			return nil, nil, rounds, err
		}
		for _, id := range moved {
			pending = append(pending, owner[id])
		}
	}
	res = make([]gitrepo.ChangeResult, len(plans))
	for i, id := range ids {
		res[i] = b.Result(id)
	}
	return res, calls, rounds, nil
}

// sealed imitates a SOPS encoder: the file holds a digest of the plaintext and a random
// "ciphertext", and the encoder keeps the existing file when its digest matches, so the
// same secret planned twice is byte-identical.
func sealed(path, plaintext string) planner {
	return func(base gitrepo.Tree) (gitrepo.Change, error) {
		digest := "digest: " + plaintext + "\n"
		old, ok, err := base.ReadFile(path)
		if err != nil {
			return gitrepo.Change{}, err
		}
		b := old
		if !ok || !bytes.HasPrefix(old, []byte(digest)) {
			nonce := make([]byte, 8)
			rand.Read(nonce)
			b = []byte(digest + "ciphertext: " + hex.EncodeToString(nonce) + "\n")
		}
		return gitrepo.Change{Subject: "seal " + path, Files: map[string][]byte{path: b}}, nil
	}
}

// TestApplyPlannedPlansAgainWhenStale: two writers seal the same secret from a stale
// head. The first pushes; the second's push is refused, its plan read the secret, which
// moved, so it is stale; planned again on the new head it keeps the first writer's
// ciphertext and finds nothing to do — where a static change with its own ciphertext is a
// conflict, and a plan made on the head that wants other content is the newest intent.
func TestApplyPlannedPlansAgainWhenStale(t *testing.T) {
	t.Parallel()
	s := newGitServer(t)
	url := s.newRepo("replan", true)
	ctx := context.Background()
	const path = "c/p1/secret.sops.yaml"
	seal := func(r *gitrepo.Repo, plaintext string) (gitrepo.Planned, error) {
		head, err := r.Snapshot()
		if err != nil {
			return gitrepo.Planned{}, err
		}
		on := head.Recording()
		c, err := sealed(path, plaintext)(on)
		return gitrepo.Planned{Change: c, On: on}, err
	}

	a, b := open(t, testOptions(url)), open(t, testOptions(url))
	pa, _ := seal(a, "password-1")
	if res, err := applyPlanned(ctx, a, pa); err != nil || res.NoOp {
		t.Fatalf("first writer: %+v %v", res, err)
	}
	first, _ := fileAt(t, s.dir("replan"), "main", path)

	// b is still at the seed: its plan has a fresh nonce and its push is refused.
	pb, _ := seal(b, "password-1")
	res, err := applyPlanned(ctx, b, pb)
	if !errors.Is(err, gitrepo.ErrStale) || res.Attempts != 1 {
		t.Fatalf("second writer planned on the seed: %+v %v, want ErrStale once its push was refused", res, err)
	}
	pb, _ = seal(b, "password-1") // on the head the refused push fetched
	if res, err := applyPlanned(ctx, b, pb); err != nil || !res.NoOp {
		t.Errorf("second writer planned again: %+v %v, want a no-op", res, err)
	}
	if got, _ := fileAt(t, s.dir("replan"), "main", path); !bytes.Equal(got, first) {
		t.Errorf("the ciphertext changed: %q → %q", first, got)
	}

	// The same situation with a static change (its own ciphertext) is a conflict.
	c := open(t, testOptions(url))
	pa, _ = seal(a, "password-2")
	if _, err := applyPlanned(ctx, a, pa); err != nil {
		t.Fatal(err)
	}
	static := change("seal statically", map[string]string{path: "digest: password-2\nciphertext: other\n"})
	if _, err := c.Apply(ctx, static); !errors.Is(err, gitrepo.ErrConflict) {
		t.Errorf("static change over a re-sealed secret: err = %v, want a conflict", err)
	}
	checkRepo(t, s.dir("replan"))
	onlyFastForwards(t, s.dir("replan"), "main")
}

// TestPlanHolds: a change planned on one commit lands on a later one exactly when what
// its plan read reads the same there.
func TestPlanHolds(t *testing.T) {
	t.Parallel()
	s := newGitServer(t)
	for i, tc := range []struct {
		name  string
		read  func(gitrepo.Tree) error
		moved map[string]string // what another writer commits after the plan
		stale bool
	}{
		{"another file moved", readFile("c/a/x.yaml"), map[string]string{"c/b/x.yaml": "2"}, false},
		{"the file read moved", readFile("c/a/x.yaml"), map[string]string{"c/a/x.yaml": "2"}, true},
		{"the file read appeared", readFile("c/a/new.yaml"), map[string]string{"c/a/new.yaml": "2"}, true},
		{"the file read went", readFile("c/a/x.yaml"), map[string]string{"c/a/x.yaml": "<delete>"}, true},
		{"the same content written again", readFile("c/a/x.yaml"), map[string]string{"c/a/x.yaml": "1"}, false},
		{"a file beside the directory listed", listDir("c/a"), map[string]string{"c/a2.yaml": "2"}, false},
		{"a file in the directory listed", listDir("c/a"), map[string]string{"c/a/y.yaml": "2"}, true},
		{"deep in the tree listed", listFiles("."), map[string]string{"c/b/x.yaml": "2"}, true},
		{"a file read beside a directory listed", both(listDir("c/b"), readFile("c/a/x.yaml")), map[string]string{"c/a/x.yaml": "2"}, true},
		{"a file read in a directory listed, beside", both(listDir("c/a"), readFile("c/a/x.yaml")), map[string]string{"c/b/x.yaml": "2"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			name := fmt.Sprintf("holds-%d", i)
			url := s.newRepo(name, true)
			ctx := context.Background()
			seed := change("seed", map[string]string{"c/a/x.yaml": "1", "c/b/x.yaml": "1"})
			if _, err := open(t, testOptions(url)).Apply(ctx, seed); err != nil {
				t.Fatal(err)
			}
			r, other := open(t, testOptions(url)), open(t, testOptions(url))
			head, err := r.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			on := head.Recording()
			if err := tc.read(on); err != nil {
				t.Fatal(err)
			}
			if _, err := other.Apply(ctx, change("moved", tc.moved)); err != nil {
				t.Fatal(err)
			}
			res, err := applyPlanned(ctx, r, gitrepo.Planned{Change: change("planned", map[string]string{"c/out.yaml": "planned"}), On: on})
			if tc.stale != errors.Is(err, gitrepo.ErrStale) {
				t.Fatalf("stale = %v (%v), want %v", errors.Is(err, gitrepo.ErrStale), err, tc.stale)
			}
			got, ok := fileAt(t, s.dir(name), "main", "c/out.yaml")
			if landed := ok && string(got) == "planned"; landed == tc.stale || !tc.stale && res.NoOp {
				t.Errorf("landed = %v, want %v (%+v)", landed, !tc.stale, res)
			}
		})
	}
}

func readFile(p string) func(gitrepo.Tree) error {
	return func(t gitrepo.Tree) error { _, _, err := t.ReadFile(p); return err }
}

func both(a, b func(gitrepo.Tree) error) func(gitrepo.Tree) error {
	return func(t gitrepo.Tree) error { return errors.Join(a(t), b(t)) }
}

func listDir(d string) func(gitrepo.Tree) error {
	return func(t gitrepo.Tree) error { _, err := t.ListDir(d); return err }
}

func listFiles(d string) func(gitrepo.Tree) error {
	return func(t gitrepo.Tree) error { _, err := t.ListFiles(d); return err }
}

// TestBatchKeepsPlansThatHold: changes planned side by side on one tip land in one chain
// when nothing before them in it changed what they read: each writes a file of its own
// after listing its directory, and a shared file every one reads, with the content it
// has. A change that appends to a shared log read the log, so only the first appender of
// a round holds; the others are planned again on the new tip, the log holds every line in
// order, and the whole chain is one push.
func TestBatchKeepsPlansThatHold(t *testing.T) {
	t.Parallel()
	s := newGitServer(t)
	url := s.newRepo("side-by-side", true)
	bare := s.dir("side-by-side")
	r := open(t, testOptions(url))
	ctx := context.Background()
	if _, err := r.Apply(ctx, change("shared", map[string]string{"shared.yaml": "same\n"})); err != nil {
		t.Fatal(err)
	}
	const n, appenders = 24, 8
	plans := make([]planner, n)
	var want strings.Builder
	for i := range n {
		if i%3 == 2 {
			fmt.Fprintf(&want, "line %d\n", i)
			plans[i] = func(base gitrepo.Tree) (gitrepo.Change, error) {
				log, _, err := base.ReadFile("log.txt")
				if err != nil {
					return gitrepo.Change{}, err
				}
				return change(fmt.Sprintf("append %d", i), map[string]string{"log.txt": fmt.Sprintf("%sline %d\n", log, i)}), nil
			}
			continue
		}
		plans[i] = func(base gitrepo.Tree) (gitrepo.Change, error) {
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
	pushes := s.pushes.Load()
	res, calls, rounds, err := applyPlans(ctx, r, plans)
	if err != nil {
		t.Fatal(err)
	}
	if rounds != appenders || s.pushes.Load()-pushes != 1 {
		t.Errorf("%d rounds and %d pushes, want %d rounds (one per appender) and one push", rounds, s.pushes.Load()-pushes, appenders)
	}
	for i := range n {
		if res[i].Err != nil || res[i].NoOp {
			t.Errorf("change %d: %+v", i, res[i])
		}
		want := 1
		if i%3 == 2 {
			want = i/3 + 1 // planned once more for every appender before it
		}
		if calls[i] != want {
			t.Errorf("change %d planned %d times, want %d", i, calls[i], want)
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

// TestApplyPlannedErrors: an invalid change, and a change planned on a snapshot that
// cannot tell what it read, are refused, and nothing reaches the remote.
func TestApplyPlannedErrors(t *testing.T) {
	t.Parallel()
	s := newGitServer(t)
	url := s.newRepo("planned-errors", true)
	ctx := context.Background()
	r, other := open(t, testOptions(url)), open(t, testOptions(url))
	if _, err := r.Apply(ctx, change("move main", map[string]string{"x": "1"})); err != nil {
		t.Fatal(err)
	}
	head, err := r.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	otherHead, err := other.Snapshot() // the seed: other has not fetched the move
	if err != nil {
		t.Fatal(err)
	}
	before := strings.TrimSpace(git(t, s.dir("planned-errors"), "rev-parse", "main"))
	for _, tc := range []struct {
		name string
		repo *gitrepo.Repo
		p    gitrepo.Planned
	}{
		{"invalid path", r, gitrepo.Planned{Change: change("x", map[string]string{"a/.GIT/config": "1"}), On: head.Recording()}},
		{"another repository's snapshot", r, gitrepo.Planned{Change: change("y", map[string]string{"y": "1"}), On: otherHead.Recording()}},
		{"a snapshot that records nothing", other, gitrepo.Planned{Change: change("y", map[string]string{"y": "1"}), On: otherHead}},
	} {
		if _, err := applyPlanned(ctx, tc.repo, tc.p); !errors.Is(err, gitrepo.ErrInvalidChange) {
			t.Errorf("%s: err = %v, want ErrInvalidChange", tc.name, err)
		}
	}
	if after := strings.TrimSpace(git(t, s.dir("planned-errors"), "rev-parse", "main")); after != before {
		t.Error("a refused change reached the remote")
	}
}

// TestBatchPushPlansAgainOnAMovedRemote: a batch begun on a head the remote has left.
// Its push is refused; on the new head the change whose plan read the moved file comes
// back to be planned again, the other is kept as planned, and one push carries both.
func TestBatchPushPlansAgainOnAMovedRemote(t *testing.T) {
	t.Parallel()
	s := newGitServer(t)
	url := s.newRepo("moved", true)
	bare := s.dir("moved")
	ctx := context.Background()
	seed := change("seed", map[string]string{"a.yaml": "1", "b.yaml": "1"})
	if _, err := open(t, testOptions(url)).Apply(ctx, seed); err != nil {
		t.Fatal(err)
	}
	r := open(t, testOptions(url))
	if _, err := open(t, testOptions(url)).Apply(ctx, change("move a", map[string]string{"a.yaml": "2"})); err != nil {
		t.Fatal(err)
	}
	copyOf := func(from, to string) planner {
		return func(base gitrepo.Tree) (gitrepo.Change, error) {
			b, _, err := base.ReadFile(from)
			return change("copy "+from, map[string]string{to: string(b)}), err
		}
	}
	pushes := s.pushes.Load()
	res, calls, _, err := applyPlans(ctx, r, []planner{copyOf("a.yaml", "out/a"), copyOf("b.yaml", "out/b")})
	if err != nil {
		t.Fatal(err)
	}
	if calls[0] != 2 || calls[1] != 1 {
		t.Errorf("planned %v times, want [2 1]: only the plan that read a.yaml again", calls)
	}
	for i, r := range res {
		if r.Err != nil || r.NoOp {
			t.Errorf("change %d: %+v", i, r)
		}
	}
	if got := s.pushes.Load() - pushes; got != 1 {
		t.Errorf("%d pushes, want 1", got)
	}
	for p, want := range map[string]string{"out/a": "2", "out/b": "1"} {
		if got, _ := fileAt(t, bare, "main", p); string(got) != want {
			t.Errorf("%s = %q, want %q", p, got, want)
		}
	}
	onlyFastForwards(t, bare, "main")
}
