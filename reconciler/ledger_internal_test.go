package reconciler

import (
	"fmt"
	"testing"
)

// TestLedgerBounded: a long-running ledger keeps the newest ids, as many as a restart
// reads back, and forgets the oldest: memory stays bounded however many events come.
func TestLedgerBounded(t *testing.T) {
	t.Parallel()
	l := newLedger(3)
	for i := range 5 {
		l.Put(fmt.Sprintf("ev-%d", i), "d", Summary{Revision: fmt.Sprint(i)})
	}
	l.Put("ev-4", "d", Summary{Revision: "4"}) // known: no second place in the order
	if l.Len() != 3 || len(l.order) != 3 {
		t.Fatalf("ledger holds %d ids (order %d), want 3", l.Len(), len(l.order))
	}
	for i := range 5 {
		_, ok, err := l.Lookup(fmt.Sprintf("ev-%d", i), "d")
		if err != nil {
			t.Fatal(err)
		}
		if want := i >= 2; ok != want {
			t.Errorf("ev-%d known = %v, want %v", i, ok, want)
		}
	}
}
