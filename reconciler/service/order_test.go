package service_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/reconciler"
	"github.com/magnum-gitops/magnum-gitops/reconciler/service"
)

// gate is a Resolver that holds the reconcile of one event (by id) until released: while
// it holds, every event posted waits, each cluster's in the order the handlers submitted
// them, and all of them form the next group.
type gate struct {
	id       string
	entered  chan struct{}
	release  chan struct{}
	once     sync.Once
	released sync.Once
}

func newGate(id string) *gate {
	return &gate{id: id, entered: make(chan struct{}), release: make(chan struct{})}
}

func (g *gate) Resolve(ctx context.Context, ev *v1alpha1.ClusterEvent) error {
	if ev.ID != g.id {
		return nil
	}
	g.once.Do(func() { close(g.entered) })
	select {
	case <-g.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *gate) open() { g.released.Do(func() { close(g.release) }) }

// TestClusterOrderWithinGroup: several events of each of a few clusters, arriving in a
// known order, are reconciled in one group and pushed at once; each cluster's commits
// follow the arrival order in the first-parent history, every answer is 200 with the
// commit that carries its event, and each record holds the cluster's last event.
//
// How the arrival order is made known: a first "gate" event is posted alone, and a
// Resolver holds its reconcile. While it holds, the reconciler takes nothing more, so the
// events posted next wait, each cluster's in the order their handlers submitted them; when
// the gate opens, the reconciler takes them all as one group (MaxGroup is larger than
// their number and they are all there before MaxWait starts). The grouping is therefore
// deterministic. The order is made by posting one request at a time, 30ms apart,
// interleaving the clusters: consecutive events of one cluster are posted 90ms apart,
// while a handler needs about a millisecond from receiving a request to submitting it
// (read the body, decode). HTTP/1.1 gives no way to post without waiting for the answer on
// one connection, and nothing outside the reconciler sees a submission before its answer,
// so a time gap far larger than the handler's work is what sequences arrivals.
//
// The whole history follows the arrival order too: the group's plans are made side by
// side, and each cluster's next event reads the record its previous one wrote, so the
// chain takes one event of every cluster per round.
func TestClusterOrderWithinGroup(t *testing.T) {
	t.Parallel()
	const clusters, events = 3, 4
	g := newGate("evt-99-01")
	h := start(t, func(o *service.Options) {
		o.Status = nil
		o.MaxGroup, o.MaxWait = 100, 200*time.Millisecond
		o.Pipeline.Resolvers = append(o.Pipeline.Resolvers, g)
	})
	t.Cleanup(g.open) // runs before the harness stops the service
	dir := h.git.Dir(h.repo)
	// One reflog entry per update of main: per push.
	h.git.Git(dir, "config", "core.logAllRefUpdates", "always")

	type answer struct {
		code int
		ans  map[string]any
	}
	var wg sync.WaitGroup
	gateAnswer := make(chan answer, 1)
	wg.Go(func() {
		code, ans := h.post(clusterEvent(t, 99, 1))
		gateAnswer <- answer{code, ans}
	})
	select {
	case <-g.entered:
	case <-time.After(30 * time.Second):
		t.Fatal("the gate event was not processed")
	}

	answers := make([][]answer, clusters)
	for i := range answers {
		answers[i] = make([]answer, events)
	}
	var arrival []string // event ids in the order posted
	for n := 1; n <= events; n++ {
		for i := range clusters {
			arrival = append(arrival, fmt.Sprintf("evt-%02d-%02d", i, n))
			body := clusterEvent(t, i, n)
			wg.Go(func() {
				code, ans := h.post(body)
				answers[i][n-1] = answer{code, ans}
			})
			time.Sleep(30 * time.Millisecond)
		}
	}
	g.open()
	wg.Wait()

	if a := <-gateAnswer; a.code != http.StatusOK {
		t.Fatalf("gate event: %d %v", a.code, a.ans)
	}
	// Every answer is 200 with the commit that carries its event.
	carries := map[string]string{} // commit → event id, from the history
	log := strings.TrimSpace(h.git.Git(dir, "log", "--first-parent", "--reverse", "--format=%H %(trailers:key="+reconciler.TrailerEventID+",valueonly,separator=)", "main"))
	var history []string // event ids, oldest first
	for _, line := range strings.Split(log, "\n") {
		commit, id, _ := strings.Cut(line, " ")
		carries[commit] = id
		history = append(history, id)
	}
	revs := map[string]bool{}
	for i := range clusters {
		for n := 1; n <= events; n++ {
			a, id := answers[i][n-1], fmt.Sprintf("evt-%02d-%02d", i, n)
			rev, _ := a.ans["revision"].(string)
			switch {
			case a.code != http.StatusOK:
				t.Errorf("%s: %d %v", id, a.code, a.ans)
			case rev == "":
				t.Errorf("%s: answered without a revision: %v", id, a.ans)
			case carries[rev] != id:
				t.Errorf("%s: answered with %s, which carries %q", id, rev, carries[rev])
			}
			revs[rev] = true
		}
	}
	if t.Failed() {
		return
	}
	// The history is the gate, then the group in arrival order: in particular each
	// cluster's events in the order they arrived.
	if want := append([]string{"evt-99-01"}, arrival...); !slices.Equal(history, want) {
		t.Errorf("first-parent history, oldest first:\n%v\nwant the arrival order:\n%v", history, want)
	}
	for i := range clusters {
		var got []string
		for _, id := range history {
			if strings.HasPrefix(id, fmt.Sprintf("evt-%02d-", i)) {
				got = append(got, id)
			}
		}
		want := []string{}
		for n := 1; n <= events; n++ {
			want = append(want, fmt.Sprintf("evt-%02d-%02d", i, n))
		}
		if !slices.Equal(got, want) {
			t.Errorf("cluster %d committed as %v, arrived as %v", i, got, want)
		}
		record := h.git.Git(dir, "show", fmt.Sprintf("main:clusters/magnum/magnum-9f3c1b2a4d5e4f6a8b7c6d5e4f3a2b1c/c%02d-stack/%s", i, reconciler.RecordFile))
		ev, err := reconciler.ReadRecord([]byte(record))
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("evt-%02d-%02d", i, events); ev.ID != want {
			t.Errorf("cluster %d's record holds event %q, want its last, %s", i, ev.ID, want)
		}
	}
	// The events really shared a group: main moved twice, by the gate's push and then by
	// one push whose new commits are exactly the answered ones.
	pushes := strings.Fields(h.git.Git(dir, "reflog", "show", "--format=%H", "main"))
	if len(pushes) != 2 {
		t.Fatalf("main was updated %d times, want 2 (the gate, then one push for the group): %v", len(pushes), pushes)
	}
	pushed := strings.Fields(h.git.Git(dir, "rev-list", "--reverse", pushes[1]+".."+pushes[0]))
	if len(pushed) != clusters*events || len(revs) != clusters*events {
		t.Errorf("the group's push carried %d commits, %d distinct answered; want %d", len(pushed), len(revs), clusters*events)
	}
	for _, c := range pushed {
		if !revs[c] {
			t.Errorf("the group's push carried %s (%s), which no answer names", c, carries[c])
		}
	}
	// The group size metric saw a group of more than 10 events (whether it counts per
	// group or per event).
	values, err := scrape(h.url)
	if err != nil {
		t.Fatal(err)
	}
	if big := values[`magnum_gitops_group_size_bucket{le="+Inf"}`] - values[`magnum_gitops_group_size_bucket{le="10"}`]; big < 1 {
		t.Errorf("the group size metric saw no group of more than 10 events")
	}
	h.git.Fsck(h.repo)
}

// TestConflictAnswers409WithPaths: someone edits a cluster's HelmRelease directly in the
// repository (another worker count than the next event wants); the service's next event
// for that cluster, built on its last fetched head, finds on the push that the remote
// changed that path to other content than it wants, and answers 409 naming the path,
// without committing anything.
//
// gitrepo's conflict rule compares the remote head with the head the change was first
// built on, the service's last fetched one: an edit conflicts only when the service has
// not fetched since it. Here nothing fetches between the create's push and the resize (the
// service fetches on its own only after some seconds without a push); once it has
// fetched, the same edit is overwritten without a conflict.
func TestConflictAnswers409WithPaths(t *testing.T) {
	t.Parallel()
	h := start(t, func(o *service.Options) { o.Status = nil })
	code, created := h.post(fixture(t, "01-prod-a-create.yaml"))
	if code != http.StatusOK {
		t.Fatalf("create: %d %v", code, created)
	}
	const hrPath = "clusters/magnum/magnum-9f3c1b2a4d5e4f6a8b7c6d5e4f3a2b1c/prod-a-2b7xq4mzkd5h/helmrelease.yaml"

	// An operator scales the workers to 7 by hand, in a clone of the remote.
	bare := h.git.Dir(h.repo)
	work := filepath.Join(t.TempDir(), "work")
	h.git.Git("", "clone", "-q", bare, work)
	file := filepath.Join(work, hrPath)
	hr, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	// The node group's entry (the control plane's machineCount is no list item).
	if strings.Count(string(hr), "- machineCount: 3\n") != 1 || !strings.Contains(string(hr), "name: default-worker\n") {
		t.Fatalf("the HelmRelease has no single node group of 3 machines:\n%s", hr)
	}
	edited := strings.Replace(string(hr), "- machineCount: 3\n", "- machineCount: 7\n", 1)
	if err := os.WriteFile(file, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	h.git.Git(work, "commit", "-q", "-am", "scale prod-a's workers to 7 by hand")
	h.git.Git(work, "push", "-q", "origin", "main")
	manual := strings.TrimSpace(h.git.Git(work, "rev-parse", "HEAD"))

	// The service has not fetched since its create: the resize to 5 workers is built on
	// the create, its push is refused, and on the new head the HelmRelease differs from
	// both the create's and the resize's.
	code, ans := h.post(fixture(t, "02-prod-a-resize-workers.yaml"))
	if code != http.StatusConflict {
		t.Fatalf("resize after a manual edit: %d %v, want 409", code, ans)
	}
	e, _ := ans["error"].(map[string]any)
	if e["code"] != "conflict" {
		t.Errorf("error code %v, want conflict: %v", e["code"], ans)
	}
	var paths []string
	if ps, ok := e["paths"].([]any); ok {
		for _, p := range ps {
			paths = append(paths, fmt.Sprint(p))
		}
	}
	if !slices.Equal(paths, []string{hrPath}) {
		t.Errorf("paths %v, want [%s]", paths, hrPath)
	}
	msg, _ := e["message"].(string)
	if !strings.Contains(msg, "changed on the remote since the change was made") || !strings.Contains(msg, hrPath) {
		t.Errorf("message %q does not say which path changed on the remote", msg)
	}
	if head := strings.TrimSpace(h.git.Git(bare, "rev-parse", "main")); head != manual {
		t.Errorf("main is %s, want the manual commit %s: the service committed", head, manual)
	}
	if got := h.git.Git(bare, "show", "main:"+hrPath); got != edited {
		t.Errorf("the manual edit was overwritten:\n%s", got)
	}
	values, err := scrape(h.url)
	if err != nil {
		t.Fatal(err)
	}
	if got := values[`magnum_gitops_events_total{operation="resize_cluster",outcome="conflict"}`]; got != 1 {
		t.Errorf("resize conflicts counted %v, want 1", got)
	}
	if got := values["magnum_gitops_conflicts_total"]; got != 1 {
		t.Errorf("conflicts_total %v, want 1", got)
	}
	h.git.Fsck(h.repo)
}
