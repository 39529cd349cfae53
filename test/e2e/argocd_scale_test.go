//go:build e2e

package e2e

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"filippo.io/age"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv/argocd"
)

// TestE2EArgoScale (issue 48 point 6; not in CI) measures what a fleet of clusters costs the
// management cluster in Argo mode (format argo) and in Flux mode, side by side, with the
// real controllers. ARGOCD_SCALE=N renders N distinct clusters (N/10 project namespaces)
// through magnum-gitops render in each format, pushes them in one commit to a harness
// that has synced nothing else yet, asks for a reconcile as serve would, and measures
// from the push until every cluster is deployed:
//
//   - Argo: the parent Application of deploy/argocd (the sops plugin) has synced the
//     commit, and each of the N clusters' Applications (a Helm source of the
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
// ARGOCD_SCALE_PARENTS=namespace replaces the one parent Application with one per
// project namespace (as an ApplicationSet with a Git directory generator would make
// them), created right after the push, ARGOCD_SCALE_PARENT_BATCH at a time (all at
// once by default; the next batch once those created have synced: at 1,000 clusters a
// hundred parents at once time out in the repo-server together, each streaming the whole
// repository to the plugin). ARGOCD_SCALE_VALUES=object moves each
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
	if v := os.Getenv("ARGOCD_SCALE_PARENT_BATCH"); v != "" {
		s.parentBatch = envInt(t, "ARGOCD_SCALE_PARENT_BATCH", 0)
	}
	s.wait = envDuration(t, "ARGOCD_SCALE_WAIT", 10*time.Minute+time.Duration(s.n)*2*time.Second)
	if s.parents == "" {
		s.parents = parentsOne
	}
	if s.parents != parentsOne && s.parents != parentsNamespace {
		t.Fatalf("ARGOCD_SCALE_PARENTS=%q: want %s or %s", s.parents, parentsOne, parentsNamespace)
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
	trees := renderFormatTrees(t, b, id, s.n, s.projects, modes)
	t.Logf("rendered %d clusters in %d namespaces, in %d format(s), in %s", s.n, s.projects, len(modes), time.Since(start).Round(time.Second))

	var results []argoScaleResult
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			r := argoScaleResult{mode: mode, n: s.n, projects: s.projects}
			if mode == generator.FormatArgo {
				r.mode += "/" + s.parents + "/" + s.values
				if s.parents == parentsNamespace && s.parentBatch > 0 {
					r.mode += fmt.Sprintf("/b%d", s.parentBatch)
				}
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
	parentsOne       = "one"       // deploy/argocd/application.yaml over the whole path
	parentsNamespace = "namespace" // one per project namespace's directory
)

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
	// parentBatch is how many namespace parents are created at a time (0: all).
	parentBatch int
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

// procCost is one process's CPU seconds (with its reaped children's) and peak RSS.
type procCost struct {
	name    string
	cpu     float64 // seconds
	peakMiB float64
}

// renderFormatTrees renders n clusters, spread over projects namespaces, once in each
// format, with `magnum-gitops render --out-dir` (SOPS for id), into a tree per format
// (the layout's path under it), with the chart repository's and the Git server's URLs as
// placeholders (copySeedTree replaces them). The same events in both formats: the same
// clusters, names and values.
func renderFormatTrees(t *testing.T, b *binaries, id *age.X25519Identity, n, projects int, formats []string) map[string]string {
	t.Helper()
	dir := t.TempDir()
	digest := filepath.Join(dir, "digest.key")
	if err := os.WriteFile(digest, []byte(randomToken()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := readEvent(t, filepath.Join(testenv.RepoRoot(), "fixtures", "events", "01-prod-a-create.yaml"))
	trees := map[string]string{}
	for _, format := range formats {
		cfg := map[string]any{
			"magnum": map[string]any{"capi_helm": map[string]any{"helm_chart_repo": chartURLPlaceholder,
				"default_helm_chart_version": "0.27.0"}},
			"management_cluster": map[string]any{"capo_api_versions": []string{"v1beta1"}},
			"flux":               map[string]any{"path": fluxPath},
			"sops":               map[string]any{"age_recipients": []string{id.Recipient().String()}, "digest_key_file": digest},
		}
		if format == generator.FormatArgo {
			// argo.repo_url defaults to git.url; a cluster without chart patches does not
			// use it (its Application's source is the chart repository).
			cfg["format"] = generator.FormatArgo
			cfg["git"] = map[string]any{"url": gitURLPlaceholder, "branch": "main"}
		}
		data, err := yaml.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		config := filepath.Join(dir, format+".yaml")
		if err := os.WriteFile(config, data, 0o600); err != nil {
			t.Fatal(err)
		}
		// Two workers (2 cores), each rendering whole namespaces into its own tree.
		const workers = 2
		var wg sync.WaitGroup
		errs := make([]error, workers)
		for w := range workers {
			wg.Go(func() {
				out := filepath.Join(dir, format, fmt.Sprintf("tree-%d", w))
				for i := range n {
					p := i % projects
					if p%workers != w {
						continue
					}
					ev := deepCopy(base).(map[string]any)
					project := fmt.Sprintf("%032x", p+1)
					ev["id"] = fmt.Sprintf("evt-argo-scale-%d", i)
					setPath(ev, project, "context", "project_id")
					setPath(ev, project, "cluster", "project_id")
					setPath(ev, fmt.Sprintf("%08x-0000-4000-8000-%012x", i+1, i+1), "cluster", "uuid")
					setPath(ev, fmt.Sprintf("c%05d", i), "cluster", "name")
					setPath(ev, fmt.Sprintf("c%05d-%012x", i, i+1), "cluster", "stack_id")
					data, err := yaml.Marshal(ev)
					if err != nil {
						errs[w] = err
						return
					}
					cmd := exec.Command(b.magnum, "render", "-f", "-", "--config", config, "--out-dir", out)
					cmd.Stdin = bytes.NewReader(data)
					if o, err := cmd.CombinedOutput(); err != nil {
						errs[w] = fmt.Errorf("render cluster %d in format %s: %v\n%s", i, format, err, o)
						return
					}
				}
			})
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		tree := filepath.Join(dir, format, "tree-0")
		for w := 1; w < workers; w++ {
			other := filepath.Join(dir, format, fmt.Sprintf("tree-%d", w), fluxPath)
			entries, _ := os.ReadDir(other)
			for _, e := range entries {
				if e.Name() == generator.SourcesDir {
					continue // the same in every tree
				}
				if err := os.Rename(filepath.Join(other, e.Name()), filepath.Join(tree, fluxPath, e.Name())); err != nil {
					t.Fatal(err)
				}
			}
		}
		want := map[string]string{generator.FormatArgo: generator.ApplicationFile, generator.FormatFlux: "helmrelease.yaml"}[format]
		if got := countFiles(t, filepath.Join(tree, fluxPath), want); got != n {
			t.Fatalf("format %s: %d %s rendered, want %d", format, got, want, n)
		}
		trees[format] = tree
	}
	return trees
}

// countFiles counts the files named name under dir.
func countFiles(t *testing.T, dir, name string) int {
	t.Helper()
	count := 0
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == name {
			count++
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return count
}

// timeSOPSPlugin runs the sops plugin's generate command (deploy/argocd/sops-plugin.yaml,
// as argocd-cmp-server runs it) once over the Argo tree, with the sops CLI of
// hack/sops.sh and id, and returns its wall and CPU time (its children's included): what
// the parent Application's manifest generation costs the cmp-server on each commit.
func timeSOPSPlugin(t *testing.T, tree string, id *age.X25519Identity) pluginRun {
	t.Helper()
	sopsDir := testenv.BinDir("SOPS_BIN", "sops", argocd.SOPSVersion)
	if _, err := os.Stat(filepath.Join(sopsDir, "sops")); err != nil {
		t.Fatalf("sops %s is missing in %q (SOPS_BIN): run hack/sops.sh", argocd.SOPSVersion, sopsDir)
	}
	file := filepath.Join(testenv.RepoRoot(), "deploy", "argocd", "sops-plugin.yaml")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{}
	if err := yaml.Unmarshal(data, cm); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	var plugin struct {
		Spec struct {
			Generate struct {
				Command []string `json:"command"`
				Args    []string `json:"args"`
			} `json:"generate"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal([]byte(cm.Data["plugin.yaml"]), &plugin); err != nil || len(plugin.Spec.Generate.Command) == 0 {
		t.Fatalf("%s: data.plugin.yaml: no generate command (%v)", file, err)
	}
	argv := append(plugin.Spec.Generate.Command, plugin.Spec.Generate.Args...)
	key := filepath.Join(t.TempDir(), "age.agekey")
	if err := os.WriteFile(key, []byte(id.String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = filepath.Join(tree, fluxPath)
	cmd.Env = append(os.Environ(), "PATH="+sopsDir+string(os.PathListSeparator)+os.Getenv("PATH"), "SOPS_AGE_KEY_FILE="+key)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("the sops plugin's generate command over the tree: %v\n%s", err, stderr.String())
	}
	r := pluginRun{wall: time.Since(start), cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(),
		docs: bytes.Count(out.Bytes(), []byte("\n---\n")) + 1}
	_ = filepath.WalkDir(cmd.Dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(d.Name(), ".sops.yaml") {
			r.files++
		}
		return err
	})
	if bytes.Contains(out.Bytes(), []byte("ENC[")) {
		t.Fatalf("the sops plugin printed an encrypted value: a file was not decrypted")
	}
	t.Logf("the sops plugin's generate command over the whole tree (what the parent Application costs on each commit): %s wall, %s CPU, %d SOPS files decrypted, %d documents",
		r.wall.Round(time.Millisecond), r.cpu.Round(time.Millisecond), r.files, r.docs)
	return r
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
	}
	h := newHarness(t, b, false, opts...)
	if dir := os.Getenv("ARGOCD_SCALE_LOGS"); dir != "" {
		defer h.keepLogs(filepath.Join(dir, strings.ReplaceAll(r.mode, "/", "-")))
	}
	parents := []string{argoParentName}
	var pending []*unstructured.Unstructured // namespace parents not created yet
	if argo {
		if s.reconciliation != 10*time.Second {
			h.restartArgoCD(s.reconciliation)
		}
		if s.parents == parentsNamespace {
			// The namespace parents replace the one of deploy/argocd, which would render
			// the whole tree too; it has no finalizer, and has synced nothing but the seed.
			if err := h.c.Delete(h.ctx, h.object(argocd.ApplicationGVK, argocd.Namespace, argoParentName)); err != nil {
				t.Fatalf("deleting the parent Application: %v", err)
			}
			parents = nil
		}
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
	// What serve does after a push: Flux's serve.reconcile_request, Argo CD's refresh (as
	// a Git webhook does). Namespace parents are new: Argo CD compares them at once.
	switch {
	case !argo:
		h.reconcileNow(gvkGitRepository, sourceName)
	case s.parents == parentsNamespace:
		pending = h.namespaceParents(tree)
		for _, p := range pending {
			parents = append(parents, p.GetName())
		}
	default:
		h.argoCD.Refresh(argoParentName, "normal")
	}
	h.waitDeployed(r, parents, pending, s.parentBatch, rev, pushed, s.wait)
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
			r.differs, r.differPaths = h.comparedToDiffers(parents)
			t.Logf("%s: %d of %d Applications' spec.source differ from the source Argo CD last compared (status.sync.comparedTo), e.g. %q",
				r.mode, r.differs, r.n, r.differPaths)
		}
	}
}

// restartArgoCD stops the harness's Argo CD and starts it again against the same API
// server, as startArgoCD does but with timeout.reconciliation at reconciliation (the
// harness's 10 s refreshes every Application six times a minute, where Argo CD's default
// is every 120 s), then waits until the new controller has compared the parent.
func (h *harness) restartArgoCD(reconciliation time.Duration) {
	t := h.t
	t.Helper()
	h.argoCD.Stop()
	cfg := rest.CopyConfig(h.env.Config)
	cfg.WarningHandlerWithContext = rest.NoWarnings{}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	kc, err := os.ReadFile(h.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	restarted := time.Now()
	h.argoCD = argocd.StartOn(t, argocd.External{
		Client: c, KubeConfig: kc, Path: h.kustomizeDir(),
		ArgoCDCM: map[string]string{"kustomize.buildOptions": "--enable-helm"},
	}, argocd.Options{AgeIdentity: h.ageIdentity.String(), Reconciliation: reconciliation})
	h.argoCD.Refresh(argoParentName, "normal")
	seed := h.headRevision()
	h.waitFor("the restarted Argo CD to compare "+argoParentName, 3*time.Minute, func() (bool, string) {
		app, ok := h.application(argoParentName)
		if !ok {
			return false, "no Application"
		}
		at, _, _ := unstructured.NestedString(app.Object, "status", "reconciledAt")
		when, err := time.Parse(time.RFC3339, at)
		synced, state := argoSyncedAt(app, seed)
		return err == nil && !when.Before(restarted.Truncate(time.Second)) && synced, "reconciledAt " + at + "; " + state
	})
	t.Logf("Argo CD restarted with timeout.reconciliation %s", reconciliation)
}

// namespaceParents makes, for each project namespace's directory of tree, the parent
// Application of deploy/argocd with that directory as its path, named
// magnum-clusters-<namespace>; waitDeployed creates them.
func (h *harness) namespaceParents(tree string) []*unstructured.Unstructured {
	t := h.t
	t.Helper()
	file := filepath.Join(testenv.RepoRoot(), "deploy", "argocd", "application.yaml")
	objs := readObjects(t, file)
	if len(objs) != 1 || objs[0].GroupVersionKind() != argocd.ApplicationGVK {
		t.Fatalf("%s: want one Application", file)
	}
	entries, err := os.ReadDir(filepath.Join(tree, fluxPath))
	if err != nil {
		t.Fatal(err)
	}
	var apps []*unstructured.Unstructured
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		app := objs[0].DeepCopy()
		app.SetName(argoParentName + "-" + e.Name())
		for v, path := range map[string][]string{
			h.gitURL: {"spec", "source", "repoURL"}, "main": {"spec", "source", "targetRevision"},
			fluxPath + "/" + e.Name(): {"spec", "source", "path"}, argocd.SOPSPlugin: {"spec", "source", "plugin", "name"},
		} {
			if err := unstructured.SetNestedField(app.Object, v, path...); err != nil {
				t.Fatal(err)
			}
		}
		apps = append(apps, app)
	}
	return apps
}

// waitDeployed polls, every r.pollEvery, until the commit rev is applied and every one of
// r.n clusters is deployed (see TestE2EArgoScale), or wait has passed since pushed. It
// creates the pending parent Applications, batch at a time (all at once with 0), each
// batch once every parent created before has synced. In Argo mode it stops early when
// the repo-server has paused a parent's manifest generation after repeated failures
// (Argo CD tries it again only an hour later).
func (h *harness) waitDeployed(r *argoScaleResult, parents []string, pending []*unstructured.Unstructured, batch int, rev string, pushed time.Time, wait time.Duration) {
	deadline := pushed.Add(wait)
	lastLog := time.Now()
	created := len(parents) - len(pending)
	for {
		r.polls++
		applied, synced, deployed, states, why := h.scaleState(r.mode, parents, rev)
		if len(pending) > 0 && synced >= created {
			n := len(pending)
			if batch > 0 {
				n = min(batch, n)
			}
			for _, app := range pending[:n] {
				if err := h.c.Create(h.ctx, app); err != nil {
					h.t.Fatalf("creating the parent Application %s: %v", app.GetName(), err)
				}
			}
			pending, created = pending[n:], created+n
		}
		now := time.Since(pushed)
		if applied && r.applied == 0 {
			r.applied = now
		}
		if deployed > 0 && r.first == 0 {
			r.first = now
		}
		r.deployed, r.states = deployed, states
		if applied && deployed == r.n {
			r.all = now
			return
		}
		if strings.Contains(why, "Manifest generation error (cached)") {
			r.all, r.failed = now, "the repo-server paused a parent's manifest generation: "+why
			return
		}
		if time.Now().After(deadline) {
			r.all, r.failed = now, fmt.Sprintf("timed out after %s: %d of %d deployed, applied %v; %s", wait, deployed, r.n, applied, why)
			return
		}
		if time.Since(lastLog) >= time.Minute {
			h.t.Logf("%s after %s: applied %v, %d of %d deployed, %v; %s", r.mode, now.Round(time.Second), applied, deployed, r.n, states, why)
			lastLog = time.Now()
		}
		select {
		case <-h.ctx.Done():
			r.failed = h.ctx.Err().Error()
			return
		case <-time.After(r.pollEvery):
		}
	}
}

// scaleState reads whether rev is applied (every parent Application synced it, or the
// root Kustomization applied it), how many parents synced it, how many clusters are
// deployed, the count of each cluster state, and what the first parent not synced, or the
// root, shows.
func (h *harness) scaleState(mode string, parents []string, rev string) (applied bool, synced, deployed int, states map[string]int, why string) {
	states = map[string]int{}
	if strings.HasPrefix(mode, generator.FormatArgo) {
		isParent := map[string]bool{}
		for _, p := range parents {
			isParent[p] = true
		}
		for _, app := range h.list(argocd.ApplicationGVK, argocd.Namespace) {
			if isParent[app.GetName()] {
				ok, state := argoSyncedAt(&app, rev)
				if ok {
					synced++
				} else if why == "" {
					why = app.GetName() + ": " + state
				}
				continue
			}
			sync, _, _ := unstructured.NestedString(app.Object, "status", "sync", "status")
			health, _, _ := unstructured.NestedString(app.Object, "status", "health", "status")
			states[sync+"/"+health]++
			if sync == "Synced" && (health == "Healthy" || health == "Progressing") {
				deployed++
			}
		}
		return synced == len(parents), synced, deployed, states, why
	}
	if k, ok := h.get(gvkKustomization, fluxNamespace, sourceName); ok {
		last, _, _ := unstructured.NestedString(k.Object, "status", "lastAppliedRevision")
		st, reason, msg, _ := condition(k, "Ready")
		applied, why = last == "main@sha1:"+rev, fmt.Sprintf("Kustomization Ready=%s %s: %.300s", st, reason, msg)
	}
	if applied {
		synced = 1
	}
	for _, hr := range h.list(gvkHelmRelease, "") {
		st, reason, _, _ := condition(&hr, "Ready")
		states["Ready="+st+" "+reason]++
		if st == "True" {
			deployed++
		}
	}
	return applied, synced, deployed, states, why
}

// childCosts reads, for every live child of the test process (the harness's processes,
// envtest's kube-apiserver and etcd), the CPU seconds it and its reaped children have
// used (utime+stime+cutime+cstime) and its peak RSS (VmHWM), by process name.
func childCosts() map[string]procCost {
	out := map[string]procCost{}
	dirs, _ := os.ReadDir("/proc")
	self := strconv.Itoa(os.Getpid())
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		end := bytes.LastIndexByte(stat, ')')
		if end < 0 {
			continue
		}
		// f[0] is field 3 of proc(5) (state), f[1] the parent; utime, stime, cutime and
		// cstime are fields 14 to 17.
		f := strings.Fields(string(stat[end+1:]))
		if len(f) < 15 || f[1] != self {
			continue
		}
		ticks := 0.0
		for _, v := range f[11:15] {
			x, _ := strconv.ParseFloat(v, 64)
			ticks += x
		}
		name := processName(pid)
		c := out[name]
		c.name = name
		c.cpu += ticks / 100 // USER_HZ
		c.peakMiB = max(c.peakMiB, peakRSSMiBOf(pid))
		out[name] = c
	}
	return out
}

// versionSuffix is the version hack/flux.sh puts in the controllers' file names.
var versionSuffix = regexp.MustCompile(`-v\d+\.\d+\.\d+$`)

// processName is the base name of a process's executable as it was run (Argo CD's
// multi-call binary runs under each command's name; redis-server rewrites its title),
// without a version suffix.
func processName(pid int) string {
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	argv0, _, _ := bytes.Cut(cmdline, []byte{0})
	fields := strings.Fields(string(argv0))
	if len(fields) == 0 {
		return strconv.Itoa(pid)
	}
	return versionSuffix.ReplaceAllString(filepath.Base(fields[0]), "")
}

// peakRSSMiBOf is a process's VmHWM in MiB.
func peakRSSMiBOf(pid int) float64 {
	status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for line := range strings.SplitSeq(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			return kb / 1024
		}
	}
	return 0
}

// costDelta is each process's CPU between two readings and its peak RSS at the second,
// the processes that used none left out, the largest first.
func costDelta(before, after map[string]procCost) []procCost {
	var out []procCost
	for name, a := range after {
		c := procCost{name: name, cpu: a.cpu - before[name].cpu, peakMiB: a.peakMiB}
		if c.cpu > 0 || c.peakMiB > 0 {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].cpu != out[j].cpu {
			return out[i].cpu > out[j].cpu
		}
		return out[i].name < out[j].name
	})
	return out
}

// loadAverage is /proc/loadavg's three load averages.
func loadAverage() string {
	data, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// machineSummary names the machine the figures come from: cores, CPU model, memory.
func machineSummary() string {
	model := "?"
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				model = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	mem := "?"
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		for line := range strings.SplitSeq(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
				mem = fmt.Sprintf("%.1f GiB", kb/(1<<20))
			}
		}
	}
	cores := 0
	if out, err := exec.Command("nproc").Output(); err == nil {
		cores, _ = strconv.Atoi(strings.TrimSpace(string(out)))
	}
	return fmt.Sprintf("%d cores (%s), %s RAM, load average %s", cores, model, mem, loadAverage())
}

// formatScaleTable is the results as fixed tables: one summary line per mode (idle
// syncs and the Applications whose source differs from the one compared: Argo CD only),
// then one
// line per process and mode with its CPU (total and per cluster) and peak RSS during the
// push window, and its CPU during the idle window (per cluster and minute).
func formatScaleTable(results []argoScaleResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-24s %6s %5s %9s %9s %9s %9s %10s %9s %8s %7s %6s %11s %6s %6s  %-16s %-16s %s\n", "mode", "N", "ns", "applied", "first", "all",
		"s/cluster", "API req", "req/clust", "git MiB", "charts", "polls", "idle req/m", "syncs", "differ", "load start", "load end", "result")
	for _, r := range results {
		result := "ok"
		if r.failed != "" {
			result = fmt.Sprintf("FAILED (%d of %d deployed)", r.deployed, r.n)
		}
		idleReq := 0.0
		if r.idle > 0 {
			idleReq = r.idleRequests / r.idle.Minutes()
		}
		fmt.Fprintf(&b, "%-24s %6d %5d %8.1fs %8.1fs %8.1fs %9.3f %10.0f %9.1f %8.1f %7d %6d %11.0f %6d %6d  %-16s %-16s %s\n", r.mode, r.n, r.projects,
			r.applied.Seconds(), r.first.Seconds(), r.all.Seconds(), r.all.Seconds()/float64(r.n), r.apiRequests, r.apiRequests/float64(r.n),
			r.gitMiB, r.chartRequests, r.polls, idleReq, r.idleSyncs, r.differs, r.loadStart, r.loadEnd, result)
	}
	for _, r := range results {
		if r.plugin.wall > 0 {
			fmt.Fprintf(&b, "sops plugin over the whole tree (%d files): %.1fs wall, %.1fs CPU, %.1f ms CPU per cluster, on each commit\n",
				r.plugin.files, r.plugin.wall.Seconds(), r.plugin.cpu.Seconds(), 1000*r.plugin.cpu.Seconds()/float64(r.n))
		}
	}
	fmt.Fprintf(&b, "\n%-24s %-30s %10s %14s %12s %10s %14s\n", "mode", "process", "CPU s", "CPU ms/cluster", "peak RSS MiB", "idle CPU s", "idle ms/cl/min")
	for _, r := range results {
		idle := map[string]float64{}
		for _, c := range r.idleCosts {
			idle[c.name] = c.cpu
		}
		perMin := func(cpu float64) float64 {
			if r.idle == 0 {
				return 0
			}
			return 1000 * cpu / float64(r.n) / r.idle.Minutes()
		}
		total, idleTotal := 0.0, 0.0
		for _, c := range r.costs {
			fmt.Fprintf(&b, "%-24s %-30s %10.1f %14.1f %12.0f %10.1f %14.2f\n", r.mode, c.name, c.cpu, 1000*c.cpu/float64(r.n), c.peakMiB, idle[c.name], perMin(idle[c.name]))
			total += c.cpu
			idleTotal += idle[c.name]
		}
		fmt.Fprintf(&b, "%-24s %-30s %10.1f %14.1f %12s %10.1f %14.2f\n", r.mode, "TOTAL", total, 1000*total/float64(r.n), "", idleTotal, perMin(idleTotal))
	}
	return b.String()
}

// requestLabels picks the verb, resource and subresource labels of a metric line.
var requestLabels = regexp.MustCompile(`(verb|resource|subresource|group)="([^"]*)"`)

// apiRequestsBy is the API server's apiserver_request_total by verb, group, resource and
// subresource: what the requests of a window were.
func (h *harness) apiRequestsBy() map[string]float64 {
	cs, err := kubernetes.NewForConfig(h.env.Config)
	if err != nil {
		h.t.Fatal(err)
	}
	raw, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(h.ctx)
	if err != nil {
		h.t.Fatalf("API server /metrics: %v", err)
	}
	out := map[string]float64{}
	for line := range strings.SplitSeq(string(raw), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		labels := map[string]string{}
		for _, m := range requestLabels.FindAllStringSubmatch(line, -1) {
			labels[m[1]] = m[2]
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			continue
		}
		key := labels["verb"] + " " + labels["resource"]
		if labels["group"] != "" {
			key += "." + labels["group"]
		}
		if labels["subresource"] != "" {
			key += "/" + labels["subresource"]
		}
		out[key] += v
	}
	return out
}

// topRequests is the largest differences between two apiRequestsBy readings, as
// "count verb resource" items.
func topRequests(before, after map[string]float64, n int) []string {
	type kv struct {
		k string
		v float64
	}
	var all []kv
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			all = append(all, kv{k, d})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].v > all[j].v })
	var out []string
	for _, e := range all[:min(n, len(all))] {
		out = append(out, fmt.Sprintf("%.0f %s", e.v, e.k))
	}
	return out
}

// argoSyncs reads, for every Application, the id of its last sync (status.history, which
// counts its sync operations), and counts the kinds of the resources Argo CD shows
// OutOfSync: what an idle window re-syncs, and why.
func (h *harness) argoSyncs() (syncs map[string]int64, outOfSync map[string]int) {
	syncs, outOfSync = map[string]int64{}, map[string]int{}
	for _, app := range h.list(argocd.ApplicationGVK, argocd.Namespace) {
		hist, _, _ := unstructured.NestedSlice(app.Object, "status", "history")
		for _, e := range hist {
			if m, ok := e.(map[string]any); ok {
				switch id := m["id"].(type) {
				case int64:
					syncs[app.GetName()] = max(syncs[app.GetName()], id)
				case float64:
					syncs[app.GetName()] = max(syncs[app.GetName()], int64(id))
				}
			}
		}
		res, _, _ := unstructured.NestedSlice(app.Object, "status", "resources")
		for _, e := range res {
			if m, ok := e.(map[string]any); ok && m["status"] == "OutOfSync" {
				outOfSync[fmt.Sprint(m["kind"])]++
			}
		}
	}
	return syncs, outOfSync
}

// syncsBetween is how many sync operations the Applications ran between two readings.
func syncsBetween(before, after map[string]int64) int64 {
	var n int64
	for name, id := range after {
		n += id - before[name]
	}
	return n
}

// keepLogs copies every process's log (the harness's, and Argo CD's) into dir
// (ARGOCD_SCALE_LOGS): both are removed when the test passes.
func (h *harness) keepLogs(dir string) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		h.t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(h.logDir, "*.log"))
	if h.argoCD != nil {
		more, _ := filepath.Glob(filepath.Join(h.argoCD.Dir(), "logs", "*.log"))
		files = append(files, more...)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, filepath.Base(f)), data, 0o644)
		}
		if err != nil {
			h.t.Errorf("keeping %s: %v", f, err)
		}
	}
	h.t.Logf("logs kept in %s", dir)
}

// comparedToDiffers counts the clusters' Applications whose spec.source differs from
// status.sync.comparedTo.source, the source Argo CD last compared: the application
// controller compares such an Application again at once ("spec.source differs"), over and
// over while it stays so. It returns the count and the first differing paths seen.
func (h *harness) comparedToDiffers(parents []string) (int, []string) {
	count := 0
	var paths []string
	for _, app := range h.list(argocd.ApplicationGVK, argocd.Namespace) {
		if slices.Contains(parents, app.GetName()) {
			continue
		}
		spec, _, _ := unstructured.NestedFieldNoCopy(app.Object, "spec", "source")
		compared, _, _ := unstructured.NestedFieldNoCopy(app.Object, "status", "sync", "comparedTo", "source")
		d := diffPaths(spec, compared, "source")
		if len(d) > 0 {
			count++
			if paths == nil {
				paths = d[:min(5, len(d))]
			}
		}
	}
	return count, paths
}

// diffPaths lists the paths where two decoded JSON values differ, a key that one map
// lacks and the other holds as null included.
func diffPaths(a, b any, at string) []string {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		var out []string
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		for k := range keys {
			av, ain := am[k]
			bv, bin := bm[k]
			if ain != bin {
				out = append(out, fmt.Sprintf("%s.%s: %v | %v", at, k, describe(av, ain), describe(bv, bin)))
				continue
			}
			out = append(out, diffPaths(av, bv, at+"."+k)...)
		}
		sort.Strings(out)
		return out
	}
	as, aok := a.([]any)
	bs, bok := b.([]any)
	if aok && bok && len(as) == len(bs) {
		var out []string
		for i := range as {
			out = append(out, diffPaths(as[i], bs[i], fmt.Sprintf("%s[%d]", at, i))...)
		}
		return out
	}
	if fmt.Sprint(a) != fmt.Sprint(b) {
		return []string{fmt.Sprintf("%s: %v | %v", at, a, b)}
	}
	return nil
}

// describe shows a map value, or that the key is absent.
func describe(v any, present bool) string {
	if !present {
		return "(absent)"
	}
	if v == nil {
		return "null"
	}
	return fmt.Sprint(v)
}

// helmValuesAsObject rewrites every Application of the tree: its spec.source.helm.values
// text becomes the same values in spec.source.helm.valuesObject (valuesObject).
func helmValuesAsObject(t *testing.T, tree string) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(filepath.Join(tree, fluxPath), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.Name() != generator.ApplicationFile {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		app := map[string]any{}
		if err := yaml.Unmarshal(data, &app); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		helm, ok := getPath(app, "spec", "source", "helm").(map[string]any)
		text, _ := helm["values"].(string)
		if !ok || text == "" {
			return fmt.Errorf("%s: no spec.source.helm.values", path)
		}
		var values map[string]any
		if err := yaml.Unmarshal([]byte(text), &values); err != nil {
			return fmt.Errorf("%s: its values: %w", path, err)
		}
		delete(helm, "values")
		helm["valuesObject"] = values
		out, err := yaml.Marshal(app)
		if err != nil {
			return err
		}
		n++
		return os.WriteFile(path, out, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("moved the values of %d Applications from helm.values to helm.valuesObject", n)
}
