package reconciler

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/gitrepo"
	"github.com/magnum-gitops/magnum-gitops/internal/fixturetest"
)

// resize is fixture 02 for cluster n (its own UUID, name and stack id) at count workers.
func resize(t *testing.T, id string, n, count int) *v1alpha1.ClusterEvent {
	t.Helper()
	ev := fixtureEvent(t, "02-prod-a-resize-workers.yaml")
	ev.ID = id
	ev.Cluster.UUID = "3e9b7c52-1d4a-4f8e-9b6c-00000000000" + string(rune('0'+n))
	ev.Cluster.Name, ev.Cluster.StackID = "c"+string(rune('0'+n)), "c"+string(rune('0'+n))+"-stack"
	ev.NodeGroups[1].NodeCount = count
	return ev
}

// TestReconcile: the clusters reconciled together each claim their waiting operations and
// commit them in order, one commit each, all in one push; the prologue answers at once, and
// without a commit, an id Git already carries, an id reused with another body and a client
// that gave up.
func TestReconcile(t *testing.T) {
	t.Parallel()
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	type submit struct {
		ev  *v1alpha1.ClusterEvent
		ctx context.Context // nil: one that waits
	}
	tests := []struct {
		name string
		// before are reconciled first, one group, then ops as the next one.
		before, ops []submit
		// forget starts ops with an empty ledger: another replica committed before.
		forget bool
		// outcomes are the answers to ops, in order; commits are the event ids the
		// group's push carried, oldest first, of each cluster (an id's first letter).
		outcomes []string
		commits  map[byte][]string
	}{{
		name: "two clusters, their operations in order, one push",
		ops: []submit{{ev: resize(t, "a1", 1, 2)}, {ev: resize(t, "b1", 2, 2)}, {ev: resize(t, "a2", 1, 3)},
			{ev: resize(t, "a3", 1, 4)}},
		outcomes: []string{"committed", "committed", "committed", "committed"},
		commits:  map[byte][]string{'a': {"a1", "a2", "a3"}, 'b': {"b1"}},
	}, {
		name:     "an id Git carries is answered from the ledger",
		before:   []submit{{ev: resize(t, "a1", 1, 2)}},
		ops:      []submit{{ev: resize(t, "a1", 1, 2)}, {ev: resize(t, "a2", 1, 3)}},
		outcomes: []string{"committed (replayed)", "committed"},
		commits:  map[byte][]string{'a': {"a2"}},
	}, {
		// The same answer when the ledger does not know the id: the record at the plan's
		// base finds the retry, and the history names the commit.
		name:     "an id another replica committed is answered from Git",
		before:   []submit{{ev: resize(t, "a1", 1, 2)}},
		forget:   true,
		ops:      []submit{{ev: resize(t, "a1", 1, 2)}, {ev: resize(t, "a2", 1, 3)}},
		outcomes: []string{"committed (replayed)", "committed"},
		commits:  map[byte][]string{'a': {"a2"}},
	}, {
		name:     "an id reused with another body in one group",
		ops:      []submit{{ev: resize(t, "a1", 1, 2)}, {ev: resize(t, "a1", 2, 3)}},
		outcomes: []string{"committed", "conflict"},
		commits:  map[byte][]string{'a': {"a1"}},
	}, {
		name:     "a client that gave up",
		ops:      []submit{{ev: resize(t, "a1", 1, 2), ctx: gone}, {ev: resize(t, "b1", 2, 2)}},
		outcomes: []string{"retry", "committed"},
		commits:  map[byte][]string{'b': {"b1"}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			remote, repo := testRemote(t)
			dir := remote.Dir("r.git")
			remote.Git(dir, "config", "core.logAllRefUpdates", "always")
			if _, err := repo.Apply(context.Background(), gitrepo.Change{Files: map[string][]byte{"README.md": []byte("# clusters\n")}, Subject: "readme"}); err != nil {
				t.Fatal(err)
			}
			cfg := generator.DefaultConfig()
			var groups []groupStats
			r := &Reconciler{Pipeline: &Pipeline{Config: generator.MustSite(cfg), Secrets: SecretPolicy{Plaintext: true}},
				Sink: &GitSink{Repo: repo}, ledger: newLedger(ledgerHistory)}
			r.Start()
			var carrier string // the commit that carried before's events
			reconcile := func(subs []submit) []string {
				var ops []*operation
				for _, s := range subs {
					o := op(s.ev.Cluster.UUID, s.ev.ID)
					o.ev, o.digest = s.ev, eventDigest(s.ev)
					if s.ctx != nil {
						o.ctx = s.ctx
					}
					r.desired.put(o)
					ops = append(ops, o)
				}
				rep := r.Reconcile(context.Background(), r.desired.take(len(subs))...)
				groups = append(groups, groupStats{rep.Events, rep.Pushes, rep.Retries})
				var got []string
				for _, o := range ops {
					sum := <-o.answer
					if sum.Replayed {
						sum.Outcome += " (replayed)"
						if sum.Revision != carrier {
							t.Errorf("%s replayed with revision %q, want %s, the commit that carried it", o.ev.ID, sum.Revision, carrier)
						}
					}
					got = append(got, sum.Outcome)
				}
				return got
			}
			if len(tt.before) > 0 {
				reconcile(tt.before)
				carrier = strings.TrimSpace(remote.Git(dir, "rev-parse", "main"))
			}
			if tt.forget {
				r.ledger = newLedger(ledgerHistory)
			}
			head := strings.TrimSpace(remote.Git(dir, "rev-parse", "main"))
			pushesBefore := len(strings.Fields(remote.Git(dir, "reflog", "show", "--format=%H", "main")))
			if diff := cmp.Diff(tt.outcomes, reconcile(tt.ops)); diff != "" {
				t.Errorf("answers (-want +got):\n%s", diff)
			}
			commits := map[byte][]string{}
			for _, id := range strings.Fields(remote.Git(dir, "log", "--reverse", "--format=%(trailers:key="+trailerEventID+",valueonly,separator=)", head+"..main")) {
				commits[id[0]] = append(commits[id[0]], id)
			}
			if diff := cmp.Diff(tt.commits, commits); diff != "" {
				t.Errorf("commits pushed (-want +got):\n%s", diff)
			}
			pushes := len(strings.Fields(remote.Git(dir, "reflog", "show", "--format=%H", "main"))) - pushesBefore
			wantPushes := min(len(tt.commits), 1)
			if pushes != wantPushes {
				t.Errorf("%d pushes, want %d", pushes, wantPushes)
			}
			if last := groups[len(groups)-1]; last.Events != len(tt.ops) || last.Pushes != wantPushes {
				t.Errorf("the group observed as %+v, want %d events and %d pushes", last, len(tt.ops), wantPushes)
			}
		})
	}
}

// fixtureEvent decodes one fixture event.
func fixtureEvent(t testing.TB, name string) *v1alpha1.ClusterEvent {
	t.Helper()
	return fixturetest.Event(t, name)
}
