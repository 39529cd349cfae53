package reconciler

import (
	"fmt"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/internal/config"
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

// TestDefaultHistoryIsWhatTheLedgerReads: the history serve clones by default reaches as
// far back as the ledger reads after a start, and no further: fetching more would cost
// every start without any reader using it.
func TestDefaultHistoryIsWhatTheLedgerReads(t *testing.T) {
	t.Parallel()
	if got, want := config.DefaultHistory.MaxCommits, ledgerHistory; got != want {
		t.Errorf("config.DefaultHistory.MaxCommits = %d, ledgerHistory = %d: they must agree", got, want)
	}
}
