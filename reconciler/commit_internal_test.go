package reconciler

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/magnum-gitops/magnum-gitops/gitrepo"
)

// TestPlanInOrder: plans run side by side, but each is handed over in pending's order
// as soon as it and those before it are planned, whatever order they end in; an error
// from the hand-over ends the round, and no plan starts after it.
func TestPlanInOrder(t *testing.T) {
	t.Parallel()
	_, repo := testRemote(t)
	b, err := repo.Begin(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	errAdd := errors.New("add failed")
	tests := []struct {
		name    string
		pending []int
		// slow plans take a while, so that those after them end first.
		slow    map[int]bool
		failAt  int // the plan whose hand-over fails; -1 for none
		want    []int
		wantErr error
	}{
		{name: "all, the first slow", pending: []int{0, 1, 2, 3, 4, 5}, slow: map[int]bool{0: true}, failAt: -1, want: []int{0, 1, 2, 3, 4, 5}},
		{name: "a subset", pending: []int{1, 3, 5}, slow: map[int]bool{3: true}, failAt: -1, want: []int{1, 3, 5}},
		{name: "hand-over fails", pending: []int{0, 1, 2, 3, 4, 5}, failAt: 1, want: []int{0, 1}, wantErr: errAdd},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var started atomic.Int32
			plans := make([]planFunc, 6)
			for i := range plans {
				plans[i] = func(tree gitrepo.Tree) (gitrepo.Change, error) {
					started.Add(1)
					if tc.slow[i] {
						time.Sleep(20 * time.Millisecond)
					}
					if _, _, err := tree.ReadFile("x"); err != nil {
						return gitrepo.Change{}, err
					}
					return gitrepo.Change{Subject: "p"}, errNothingToDo
				}
			}
			var got []int
			var waited time.Duration
			err := planInOrder(b.Tip(), plans, tc.pending, &waited, func(i int, p gitrepo.Planned, err error) error {
				if !errors.Is(err, errNothingToDo) || p.On == nil {
					t.Errorf("plan %d handed over with %v, snapshot %v", i, err, p.On)
				}
				got = append(got, i)
				if i == tc.failAt {
					return errAdd
				}
				return nil
			})
			if !errors.Is(err, tc.wantErr) || !slices.Equal(got, tc.want) {
				t.Fatalf("handed over %v, %v; want %v, %v", got, err, tc.want, tc.wantErr)
			}
			if n := int(started.Load()); n > len(tc.pending) {
				t.Errorf("%d plans started, %d pending", n, len(tc.pending))
			}
			// Nothing runs after planInOrder returned.
			n := started.Load()
			time.Sleep(30 * time.Millisecond)
			if started.Load() != n {
				t.Error("a plan started after planInOrder returned")
			}
		})
	}
}
