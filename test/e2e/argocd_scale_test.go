//go:build e2e

package e2e

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"filippo.io/age"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/magnum-gitops/magnum-gitops/generator"
)

// TestE2EArgoScale (issue 48 point 6; not in CI) measures what a fleet of clusters costs the
// management cluster in Argo mode (format argo) and in Flux mode, side by side, with the
// real controllers. ARGOCD_SCALE=N renders N distinct clusters (N/10 project namespaces)
// through magnum-gitops render in each format, pushes them in one commit to a harness
// that has synced nothing else yet, asks for a reconcile as serve would, and measures
// from the push until every cluster is deployed:
//
//   - Argo: the parent Application of deploy/argocd (the sops plugin), or every
//     namespace's and their root, has synced the commit, and each of the N clusters' Applications (a Helm source of the
//     openstack-cluster chart, which the repo-server renders once per Application) is
//     Synced and Healthy or Progressing (what the chart's objects reach with no Cluster
//     API controller running: the Cluster waits for its infrastructure);
//   - Flux: the root Kustomization has applied the commit and each of the N HelmReleases
//     (one HelmChart each, built by source-controller; helm-controller renders and
//     installs the chart once per release) is Ready.
//
// For every process the harness runs (Argo CD's application controller, repo-server,
// cmp-server and Redis, or Flux's three controllers; the kube-apiserver and etcd of
// both) it reports the CPU seconds spent in that window, its children's included (helm,
// git, kustomize, sh and sops run as children of the repo-server and the cmp-server;
// /proc/<pid>/stat's cutime and cstime hold them once reaped), and its peak RSS (VmHWM),
// then the same for an idle window after (ARGOCD_SCALE_IDLE, 4m): what the fleet costs
// when nothing changes. In Argo mode it also times, before the harness starts, one run of
// the sops plugin's generate command over the whole tree: what the parent Application
// costs the cmp-server on every commit.
//
// Settings: ARGOCD_SCALE_MODES (argo,flux) picks the modes; argo needs ARGOCD_TESTS=1
// and Argo CD (hack/argocd.sh). ARGOCD_SCALE_RECONCILIATION (120s, Argo CD's default
// timeout.reconciliation) restarts the harness's Argo CD, which refreshes every
// Application every 10 s, with that period ("10s" keeps the harness's).
// ARGOCD_SCALE_PARENTS=namespace renders the Argo tree with flux.layout per-namespace: a
// parent Application per project namespace, written by magnum-gitops and applied by the
// root of deploy/argocd/per-namespace; =branch with branch-per-namespace, each parent
// following its namespace's published branch (the test publishes them after the push, as
// serve does). ARGOCD_SCALE_VALUES=object moves each
// Application's helm.values text to helm.valuesObject, as earlier builds wrote it: the
// chart's values hold nulls, which Argo CD's merge patch of the Application's status drops
// from status.sync.comparedTo, so that the controller finds spec.source changed and
// compares the Application again without pause (the test reports how many differ after
// the idle window). ARGOCD_SCALE_WAIT bounds push → every cluster deployed (10m + 2s a cluster).
// ARGOCD_SCALE_LOGS=<dir> keeps every process's log there.
// docs/figures-argocd.md holds the figures.
func TestE2EArgoScale(t *testing.T) {
	if os.Getenv("ARGOCD_SCALE") == "" {
		t.Skip("set ARGOCD_SCALE to a number of clusters (e.g. ARGOCD_SCALE=100): measures Argo CD and Flux with that many clusters")
	}
	s := scaleSettings{n: envInt(t, "ARGOCD_SCALE", 100), idle: envDuration(t, "ARGOCD_SCALE_IDLE", 4*time.Minute),
		reconciliation: envDuration(t, "ARGOCD_SCALE_RECONCILIATION", 120*time.Second), parents: os.Getenv("ARGOCD_SCALE_PARENTS"),
		values: os.Getenv("ARGOCD_SCALE_VALUES")}
	s.projects = max(1, s.n/10)
	s.wait = envDuration(t, "ARGOCD_SCALE_WAIT", 10*time.Minute+time.Duration(s.n)*2*time.Second)
	if s.parents == "" {
		s.parents = parentsOne
	}
	if s.parents != parentsOne && s.parents != parentsNamespace && s.parents != parentsBranch {
		t.Fatalf("ARGOCD_SCALE_PARENTS=%q: want %s, %s or %s", s.parents, parentsOne, parentsNamespace, parentsBranch)
	}
	if s.values == "" {
		s.values = valuesString
	}
	if s.values != valuesObject && s.values != valuesString {
		t.Fatalf("ARGOCD_SCALE_VALUES=%q: want %s or %s", s.values, valuesObject, valuesString)
	}
	modes := []string{generator.FormatArgo, generator.FormatFlux}
	if m := os.Getenv("ARGOCD_SCALE_MODES"); m != "" {
		modes = strings.Split(m, ",")
	}
	for _, m := range modes {
		if m != generator.FormatArgo && m != generator.FormatFlux {
			t.Fatalf("ARGOCD_SCALE_MODES=%q: want argo and/or flux", os.Getenv("ARGOCD_SCALE_MODES"))
		}
	}
	if slices.Contains(modes, generator.FormatArgo) && os.Getenv("ARGOCD_TESTS") == "" {
		t.Skip("Argo mode needs ARGOCD_TESTS=1 and Argo CD (hack/argocd.sh); ARGOCD_SCALE_MODES=flux measures Flux alone")
	}
	b := findBinaries(t)
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("machine: %s", machineSummary())
	start := time.Now()
	trees := renderFormatTrees(t, b, id, s.n, s.projects, modes, s.layout())
	t.Logf("rendered %d clusters in %d namespaces, in %d format(s), in %s", s.n, s.projects, len(modes), time.Since(start).Round(time.Second))

	var results []argoScaleResult
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			r := argoScaleResult{mode: mode, n: s.n, projects: s.projects}
			if mode == generator.FormatArgo {
				r.mode += "/" + s.parents + "/" + s.values
				r.plugin = timeSOPSPlugin(t, trees[mode], id)
				if s.values == valuesObject {
					helmValuesAsObject(t, trees[mode])
				}
			}
			runFormatScale(t, b, id, trees[mode], s, &r)
			results = append(results, r)
		})
	}
	t.Logf("Argo CD and Flux at scale (Argo CD timeout.reconciliation %s, its controller's repo-server timeout 30s):\n%s",
		s.reconciliation, formatScaleTable(results))
}

// The parent Applications of ARGOCD_SCALE_PARENTS.
const (
	parentsOne = "one" // deploy/argocd/application.yaml over the whole path
	// parentsNamespace is flux.layout per-namespace: a parent Application per project
	// namespace's directory, written by magnum-gitops under <path>/flux and applied by
	// deploy/argocd/per-namespace.
	parentsNamespace = "namespace"
	// parentsBranch is flux.layout branch-per-namespace: the same parents, each following
	// its namespace's published branch (deploy/argocd/branch-per-namespace).
	parentsBranch = "branch"
)

// layout is the flux.layout the Argo tree is rendered with.
func (s scaleSettings) layout() string {
	switch s.parents {
	case parentsNamespace:
		return generator.LayoutPerNamespace
	case parentsBranch:
		return generator.LayoutBranchPerNamespace
	}
	return generator.LayoutSingle
}

// How the clusters' Applications carry their values (ARGOCD_SCALE_VALUES).
const (
	// valuesString is the values as YAML text in spec.source.helm.values, as magnum-gitops
	// writes them: Argo CD keeps a string as it is.
	valuesString = "string"
	// valuesObject is the same values in spec.source.helm.valuesObject, whose nulls the
	// application controller's merge patch of its status drops from
	// status.sync.comparedTo.
	valuesObject = "object"
)

// scaleSettings are TestE2EArgoScale's settings.
type scaleSettings struct {
	n, projects int
	// wait bounds push → every cluster deployed; idle is the idle window after.
	wait, idle time.Duration
	// reconciliation is Argo CD's timeout.reconciliation; parents, parentsOne or
	// parentsNamespace.
	reconciliation time.Duration
	parents        string
	// values is valuesObject or valuesString.
	values string
}

func envDuration(t *testing.T, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		t.Fatalf("%s=%q: want a duration", name, v)
	}
	return d
}

// argoScaleResult is one mode's figures.
type argoScaleResult struct {
	mode        string // flux, argo/one or argo/namespace
	n, projects int
	// applied is push → the parent Applications synced (Argo) or the root Kustomization
	// applied (Flux) the commit: every cluster's Application or HelmRelease exists.
	applied time.Duration
	// first and all are push → the first, and the last, cluster deployed.
	first, all time.Duration
	failed     string // why the wait ended without every cluster deployed
	// deployed is how many clusters were deployed when the wait ended.
	deployed int
	// states counts the clusters' final states: Argo sync and health, Flux Ready.
	states map[string]int
	// costs are each process's CPU during the push window and its peak RSS at its end;
	// idleCosts its CPU during the idle window, idleRequests the API server's requests.
	costs, idleCosts []procCost
	idle             time.Duration
	idleRequests     float64
	// top and idleTop are the most frequent requests of each window.
	top, idleTop []string
	// idleSyncs is how many sync operations Argo CD ran in the idle window.
	idleSyncs int64
	// differs counts the Applications whose spec.source differs from
	// status.sync.comparedTo.source after the idle window; differPaths shows where.
	differs     int
	differPaths []string
	// apiRequests is the API server's requests during the push window (the test's own
	// polls included: polls lists every pollEvery), gitMiB what the Git server sent,
	// chartRequests the chart repository's requests.
	apiRequests        float64
	polls              int
	pollEvery          time.Duration
	gitMiB             float64
	chartRequests      int64
	loadStart, loadEnd string
	plugin             pluginRun
	pushDuration       time.Duration
}

// pluginRun is one run of the sops plugin's generate command over the whole tree.
type pluginRun struct {
	wall, cpu time.Duration
	files     int // SOPS files decrypted
	docs      int // documents printed
}

// runFormatScale starts a harness in r.mode with nothing but the seed, pushes the tree in
// one commit, asks for a reconcile as serve does after a push, waits until every cluster
// is deployed (or s.wait passes) and fills r with the figures.
func runFormatScale(t *testing.T, b *binaries, id *age.X25519Identity, tree string, s scaleSettings, r *argoScaleResult) {
	opts := []harnessOption{withoutServe(), withAgeIdentity(id), func(h *harness) {
		// One build of every cluster's files takes longer than deploy/flux's 5m here.
		h.adjustRoot = func(k *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(k.Object, "60m", "spec", "timeout")
		}
	}}
	argo := strings.HasPrefix(r.mode, generator.FormatArgo)
	if argo {
		opts = append(opts, withArgoCD())
		switch s.parents {
		case parentsNamespace:
			opts = append(opts, withPerNamespaceLayout())
		case parentsBranch:
			opts = append(opts, withBranchPerNamespaceLayout())
		}
	}
	h := newHarness(t, b, false, opts...)
	if dir := os.Getenv("ARGOCD_SCALE_LOGS"); dir != "" {
		defer h.keepLogs(filepath.Join(dir, strings.ReplaceAll(r.mode, "/", "-")))
	}
	if argo && s.reconciliation != 10*time.Second {
		h.restartArgoCD(s.reconciliation)
	}

	work := filepath.Join(h.work, "push")
	h.git("", "clone", "-q", h.gitDir, work)
	h.seedTree = tree
	h.copySeedTree(work)
	h.git(work, "add", "-A")
	h.git(work, "commit", "-q", "-m", fmt.Sprintf("%d clusters", r.n))
	r.pollEvery = 2 * time.Second
	if r.n > 200 {
		r.pollEvery = 10 * time.Second // a list of every Application is megabytes
	}
	r.loadStart = loadAverage()
	before, reqBefore, gitBefore, chartBefore := childCosts(), h.apiRequests(), h.gitBytes.Load(), h.chartRequests.Load()
	reqBy := h.apiRequestsBy()
	pushStart := time.Now()
	h.git(work, "push", "-q", "origin", "HEAD:main")
	pushed := time.Now()
	r.pushDuration = pushed.Sub(pushStart)
	rev := strings.TrimSpace(h.git(work, "rev-parse", "HEAD"))
	if h.branchPerNamespace {
		// What serve pushes with the commit: the published branches, from a clone that
		// has the commit (the harness's publisher was opened at the seed).
		h.published = nil
		if err := h.publisher().Publish(h.ctx, h.gitFiles(h.fluxPath)...); err != nil {
			t.Fatalf("publishing the branches: %v", err)
		}
	}
	// What serve does after a push: Flux's serve.reconcile_request, Argo CD's refresh (as
	// a Git webhook does). Namespace parents are new: Argo CD compares them at once.
	var parents map[string]string
	if argo {
		h.argoCD.Refresh(argoParentName, "normal")
		parents = h.argoParents(tree, s.parents, rev)
	} else {
		h.reconcileNow(gvkGitRepository, sourceName)
	}
	h.waitDeployed(r, parents, rev, pushed, s.wait)
	after := childCosts()
	r.loadEnd = loadAverage()
	r.costs = costDelta(before, after)
	r.apiRequests = h.apiRequests() - reqBefore
	r.gitMiB = float64(h.gitBytes.Load()-gitBefore) / (1 << 20)
	r.chartRequests = h.chartRequests.Load() - chartBefore
	r.top = topRequests(reqBy, h.apiRequestsBy(), 8)
	t.Logf("%s: %.0f API requests from the push until deployed, the most %v", r.mode, r.apiRequests, r.top)
	t.Logf("%s: %d of %d clusters deployed %s after the push (pushed in %s; applied %s; first %s); states %v; load average %s → %s",
		r.mode, r.deployed, r.n, r.all.Round(time.Second), r.pushDuration.Round(time.Millisecond), r.applied.Round(time.Second),
		r.first.Round(time.Second), r.states, r.loadStart, r.loadEnd)
	if r.failed != "" {
		t.Errorf("%s: %s", r.mode, r.failed)
		return
	}
	if s.idle > 0 {
		time.Sleep(time.Second) // let the last status writes settle
		var syncsBefore map[string]int64
		if argo {
			syncsBefore, _ = h.argoSyncs()
		}
		idleBefore, idleReq, idleBy := childCosts(), h.apiRequests(), h.apiRequestsBy()
		time.Sleep(s.idle)
		r.idleCosts, r.idle = costDelta(idleBefore, childCosts()), s.idle
		r.idleRequests = h.apiRequests() - idleReq
		r.idleTop = topRequests(idleBy, h.apiRequestsBy(), 8)
		t.Logf("%s: idle for %s: %.0f API requests, the most %v", r.mode, s.idle, r.idleRequests, r.idleTop)
		if argo {
			syncsAfter, outOfSync := h.argoSyncs()
			r.idleSyncs = syncsBetween(syncsBefore, syncsAfter)
			t.Logf("%s: idle for %s: %d sync operations; resources OutOfSync at its end, by kind: %v", r.mode, s.idle, r.idleSyncs, outOfSync)
			r.differs, r.differPaths = h.comparedToDiffers(slices.Collect(maps.Keys(parents)))
			t.Logf("%s: %d of %d Applications' spec.source differ from the source Argo CD last compared (status.sync.comparedTo), e.g. %q",
				r.mode, r.differs, r.n, r.differPaths)
		}
	}
}
