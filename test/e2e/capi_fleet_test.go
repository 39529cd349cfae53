//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
)

// TestE2EClusterAPIFleet measures clusters created together and then deleted together
// through serve, Git, Flux and the real Cluster API controllers: per cluster, the time from
// its POST to the pushed commit, to its HelmRelease Ready, to its Cluster Available with
// every machine up, and to serve's CREATE_COMPLETE; and to DELETE_COMPLETE for the delete.
// Each cluster has one control-plane machine and two workers. Not in CI (minutes per size):
// E2E_CAPI_FLEET=1,10,50 runs the sizes given.
func TestE2EClusterAPIFleet(t *testing.T) {
	sizes := os.Getenv("E2E_CAPI_FLEET")
	if sizes == "" {
		t.Skip("E2E_CAPI_FLEET (e.g. 1,10,50) is not set")
	}
	b := findBinaries(t)
	for _, s := range strings.Split(sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			t.Fatalf("E2E_CAPI_FLEET: %q is not a count", s)
		}
		t.Run(strconv.Itoa(n), func(t *testing.T) { runFleet(t, b, n) })
	}
}

// fleetCluster is one cluster of the fleet and its figures.
type fleetCluster struct {
	uuid, release, create, delete  string
	pushed, ready, available, done time.Duration
	deleted                        time.Duration
}

func runFleet(t *testing.T, b *binaries, n int) {
	h := newHarness(t, b, true, withClusterAPI(3*time.Second))
	base := withMagnumCAs(t, readEvent(t, filepath.Join(testenv.RepoRoot(), "fixtures", "events", "01-prod-a-create.yaml")))
	ns := "magnum-" + getPath(base, "cluster", "project_id").(string)
	dir := t.TempDir()
	fleet := make([]*fleetCluster, n)
	for i := range fleet {
		ev := deepCopy(base).(map[string]any)
		c := &fleetCluster{uuid: fmt.Sprintf("3e9b7c52-1d4a-4f8e-9b6c-%012d", i), release: fmt.Sprintf("fleet-%03d-2b7xq4mzkd5h", i)}
		ev["id"] = fmt.Sprintf("evt-fleet-%d-create", i)
		setPath(ev, c.uuid, "cluster", "uuid")
		setPath(ev, fmt.Sprintf("fleet-%03d", i), "cluster", "name")
		setPath(ev, c.release, "cluster", "stack_id")
		setPath(ev, 1, "cluster", "master_count")
		setPath(ev, 2, "cluster", "node_count")
		for _, g := range ev["nodegroups"].([]any) {
			ng := g.(map[string]any)
			ng["uuid"] = strings.Replace(ng["uuid"].(string), "a1b2c3d4", fmt.Sprintf("%08d", i), 1)
			ng["node_count"] = map[string]any{"master": 1, "worker": 2}[ng["role"].(string)]
		}
		c.create = writeEvent(t, dir, c.release+"-create.yaml", ev)
		del := deleteOf(ev, fmt.Sprintf("evt-fleet-%d-delete", i))
		c.delete = writeEvent(t, dir, c.release+"-delete.yaml", del)
		fleet[i] = c
	}

	// All POSTed at once, as Magnum's conductors would send them.
	t0 := time.Now()
	var wg sync.WaitGroup
	for _, c := range fleet {
		wg.Go(func() {
			if ans := h.postEvent(c.create); ans.Outcome != "committed" {
				t.Errorf("%s: %q %s", c.release, ans.Outcome, ans.Message)
			}
			c.pushed = time.Since(t0)
		})
	}
	wg.Wait()
	h.waitFor(fmt.Sprintf("%d clusters CREATE_COMPLETE", n), 20*time.Minute, func() (bool, string) {
		pending := 0
		for _, c := range fleet {
			if c.done != 0 {
				continue
			}
			pending++
			if c.ready == 0 {
				if ok, _ := h.releaseReady(clusterWant{namespace: ns, release: c.release, helmRevision: 1})(); ok {
					c.ready = time.Since(t0)
				}
			}
			h.playAddonProvider(ns, c.release)
			// serve first, then CAPI: CAPI done after serve said so is a lie; before, a race.
			s := h.serveStatusOf(c.uuid)
			settled, state := h.capiSettled(ns, c.release, 1, map[string]int64{"default-worker": 2})()
			if settled && c.available == 0 {
				c.available = time.Since(t0)
			}
			if s.Status == "CREATE_COMPLETE" {
				if !settled {
					t.Fatalf("%s: CREATE_COMPLETE before CAPI settled: %s", c.release, state)
				}
				c.done = time.Since(t0)
			}
		}
		return pending == 0, fmt.Sprintf("%d of %d not complete", pending, n)
	})
	h.logUsage(fmt.Sprintf("after creating %d clusters", n))

	t1 := time.Now()
	for _, c := range fleet {
		wg.Go(func() { h.postEvent(c.delete) })
	}
	wg.Wait()
	h.waitFor(fmt.Sprintf("%d clusters DELETE_COMPLETE", n), 20*time.Minute, func() (bool, string) {
		pending := 0
		for _, c := range fleet {
			if c.deleted != 0 {
				continue
			}
			pending++
			if s := h.serveStatusOf(c.uuid); s.Status == "DELETE_COMPLETE" {
				c.deleted = time.Since(t1)
			}
		}
		return pending == 0, fmt.Sprintf("%d of %d not deleted", pending, n)
	})
	h.logUsage(fmt.Sprintf("after deleting %d clusters", n))

	pick := func(f func(*fleetCluster) time.Duration) string {
		var d []time.Duration
		for _, c := range fleet {
			d = append(d, f(c))
		}
		slices.Sort(d)
		return fmt.Sprintf("median %6s  max %6s", d[len(d)/2].Round(100*time.Millisecond), d[len(d)-1].Round(100*time.Millisecond))
	}
	t.Logf("fleet of %d, from the first POST:", n)
	t.Logf("  pushed            %s", pick(func(c *fleetCluster) time.Duration { return c.pushed }))
	t.Logf("  HelmRelease Ready %s", pick(func(c *fleetCluster) time.Duration { return c.ready }))
	t.Logf("  CAPI settled      %s", pick(func(c *fleetCluster) time.Duration { return c.available }))
	t.Logf("  CREATE_COMPLETE   %s", pick(func(c *fleetCluster) time.Duration { return c.done }))
	t.Logf("  DELETE_COMPLETE   %s (from the first delete POST)", pick(func(c *fleetCluster) time.Duration { return c.deleted }))
}
