//go:build e2e

package e2e

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"filippo.io/age"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/gitrepo"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
	"github.com/magnum-gitops/magnum-gitops/magnum"
)

// chartURLPlaceholder and gitURLPlaceholder stand for the chart repository's and the Git
// server's URLs in the pre-rendered tree: each harness serves them on its own port.
const (
	chartURLPlaceholder = "http://charts.e2e.invalid/"
	gitURLPlaceholder   = "http://git.e2e.invalid/magnum.git"
)

// scaleResult is one layout's figures.
type scaleResult struct {
	layout         string
	kustomizations int
	firstSync      time.Duration
	changed        []time.Duration // push → the changed cluster's Kustomization applied
	requests       []float64       // API server requests during a change
	kustomizeCPU   []float64       // kustomize-controller CPU seconds during a change
	sourceCPU      []float64       // source-controller CPU seconds during a change
	fetchedMiB     []float64       // MiB the Git server sent during a change
	// tick is one interval of every GitRepository after a commit: each fetches the moved
	// branch (what flux.interval costs), its time, source-controller CPU and MiB sent.
	tick               time.Duration
	tickCPU, tickMiB   float64
	repoMiB, sourceRSS float64 // the packed repository; source-controller's peak RSS
	// sample is the time from the commit that lets the sample's HelmReleases go
	// (E2E_SCALE_CAPI) to the last of their clusters Available with every machine up.
	sample time.Duration
}

// TestE2EScale (make e2e-scale; not in CI) measures the repository layouts at scale with
// the real controllers: E2E_SCALE_CLUSTERS (2,000) clusters in E2E_SCALE_PROJECTS (100)
// project namespaces, rendered by magnum-gitops with SOPS, their HelmReleases suspended so
// that helm-controller stays idle. For (a) one Kustomization over clusters/magnum
// (deploy/flux, flux.layout: single) and (b) flux.layout: per-namespace (deploy/flux/
// per-namespace: a GitRepository sparse-checked out to each namespace and a Kustomization
// for it), it times push → applied for a change to one cluster, with the reconcile
// requested after the push that serve requests (the root GitRepository, or the changed
// namespace's), and counts the API server requests and kustomize-controller CPU each
// change costs.
func TestE2EScale(t *testing.T) {
	if os.Getenv("E2E_SCALE") == "" {
		t.Skip("set E2E_SCALE=1 (make e2e-scale): renders thousands of clusters and takes tens of minutes")
	}
	b := findBinaries(t)
	n, projects, changes := envInt(t, "E2E_SCALE_CLUSTERS", 2000), envInt(t, "E2E_SCALE_PROJECTS", 100), envInt(t, "E2E_SCALE_CHANGES", 3)
	sample := 0
	if os.Getenv("E2E_SCALE_CAPI") != "" {
		sample = min(envInt(t, "E2E_SCALE_CAPI", 3), projects, n)
	}
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	tree := renderScaleTree(t, b, id, n, projects, sample)
	t.Logf("rendered %d clusters in %d namespaces in %s", n, projects, time.Since(start).Round(time.Second))

	layouts := []string{generator.LayoutBranchPerNamespace, generator.LayoutPerNamespace, generator.LayoutSingle}
	if l := os.Getenv("E2E_SCALE_LAYOUTS"); l != "" {
		layouts = strings.Split(l, ",")
	}
	var results []scaleResult
	for _, l := range layouts {
		t.Run(l, func(t *testing.T) {
			results = append(results, runScale(t, b, id, tree, l, projects, changes, sample))
		})
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%d clusters, %d namespaces, %d changes each (medians):\n", n, projects, changes)
	defer func() {
		for _, r := range results {
			if sample > 0 {
				t.Logf("%s: %d clusters of the %d let go in one commit, all Available through the real Cluster API controllers after %s", r.layout, sample, n, r.sample.Round(time.Second))
			}
		}
	}()
	fmt.Fprintf(&sb, "%-20s %6s %11s %16s %14s %16s %13s %13s | %12s %12s %12s | %9s %13s\n", "layout", "ks", "first sync", "push→changed",
		"API requests", "kustomize CPU", "source CPU", "fetched", "tick", "tick CPU", "tick fetched", "repo", "source RSS")
	for _, r := range results {
		fmt.Fprintf(&sb, "%-20s %6d %10.1fs %15.2fs %14.0f %15.1fs %12.1fs %9.1f MiB | %11.1fs %11.1fs %8.1f MiB | %5.1f MiB %9.0f MiB\n", r.layout, r.kustomizations, r.firstSync.Seconds(),
			median(r.changed).Seconds(), medianFloat(r.requests), medianFloat(r.kustomizeCPU), medianFloat(r.sourceCPU), medianFloat(r.fetchedMiB),
			r.tick.Seconds(), r.tickCPU, r.tickMiB, r.repoMiB, r.sourceRSS)
	}
	t.Logf("layouts at scale:\n%s", sb.String())
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}

// renderScaleTree renders n clusters spread over the given number of projects with
// `magnum-gitops render --out-dir` (SOPS for id) in the per-namespace layout, whose files
// are the single layout's plus <path>/flux, and suspends their HelmReleases. With a
// sample, the clusters render with the post-renderers that put them on CAPD's in-memory
// backend, and the first cluster of each of the first sample namespaces has one
// control-plane machine, two workers and RSA CAs, as the Cluster API tests' clusters do.
func renderScaleTree(t *testing.T, b *binaries, id *age.X25519Identity, n, projects, sample int) string {
	t.Helper()
	dir := t.TempDir()
	digest := filepath.Join(dir, "digest.key")
	if err := os.WriteFile(digest, []byte(randomToken()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	flux := map[string]any{"path": fluxPath, "layout": "per-namespace",
		"git": map[string]any{"url": gitURLPlaceholder, "secret_ref": gitSecretName}}
	if sample > 0 {
		flux["post_renderers"] = capiPostRenderers(t, scaleCAPIStartup)
	}
	cfg, err := yaml.Marshal(map[string]any{
		"magnum": map[string]any{"capi_helm": map[string]any{"helm_chart_repo": chartURLPlaceholder,
			"default_helm_chart_version": "0.27.0"}},
		"management_cluster": map[string]any{"capo_api_versions": []string{"v1beta1"}},
		"flux":               flux,
		"sops":               map[string]any{"age_recipients": []string{id.Recipient().String()}, "digest_key_file": digest},
	})
	if err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(config, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	base := readEvent(t, filepath.Join(testenv.RepoRoot(), "fixtures", "events", "01-prod-a-create.yaml"))
	// Two workers, each rendering whole projects into its own tree (2 cores).
	const workers = 2
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := range workers {
		wg.Go(func() {
			out := filepath.Join(dir, fmt.Sprintf("tree-%d", w))
			for i := range n {
				p := i % projects
				if p%workers != w {
					continue
				}
				ev := deepCopy(base).(map[string]any)
				project := fmt.Sprintf("%032x", p+1)
				ev["id"] = fmt.Sprintf("evt-scale-%d", i)
				setPath(ev, project, "context", "project_id")
				setPath(ev, project, "cluster", "project_id")
				setPath(ev, fmt.Sprintf("%08x-0000-4000-8000-%012x", i+1, i+1), "cluster", "uuid")
				setPath(ev, fmt.Sprintf("c%05d", i), "cluster", "name")
				setPath(ev, fmt.Sprintf("c%05d-%012x", i, i+1), "cluster", "stack_id")
				if i < sample {
					ev = sampleCluster(t, ev)
				}
				data, err := yaml.Marshal(ev)
				if err != nil {
					errs[w] = err
					return
				}
				cmd := exec.Command(b.magnum, "render", "-f", "-", "--config", config, "--out-dir", out)
				cmd.Stdin = bytes.NewReader(data)
				if o, err := cmd.CombinedOutput(); err != nil {
					errs[w] = fmt.Errorf("render cluster %d: %v\n%s", i, err, o)
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
	renderBranchFlux(t, b, dir, config, base, n, projects)
	tree := filepath.Join(dir, "tree-0")
	for w := 1; w < workers; w++ {
		other := filepath.Join(dir, fmt.Sprintf("tree-%d", w), fluxPath)
		entries, _ := os.ReadDir(other)
		for _, e := range entries {
			if e.Name() == "sources" {
				continue // the same in every tree
			}
			if e.Name() == "flux" {
				// Each worker's namespaces' GitRepositories and Kustomizations.
				files, _ := os.ReadDir(filepath.Join(other, e.Name()))
				for _, f := range files {
					if err := os.Rename(filepath.Join(other, e.Name(), f.Name()), filepath.Join(tree, fluxPath, e.Name(), f.Name())); err != nil {
						t.Fatal(err)
					}
				}
				continue
			}
			if err := os.Rename(filepath.Join(other, e.Name()), filepath.Join(tree, fluxPath, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Suspended: helm-controller must stay idle, the test measures Flux's apply only.
	releases := 0
	err = filepath.WalkDir(filepath.Join(tree, fluxPath), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.Name() != "helmrelease.yaml" {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		s := strings.Replace(string(data), "\nspec:\n", "\nspec:\n  suspend: true\n", 1)
		releases++
		return os.WriteFile(path, []byte(s), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	if releases != n {
		t.Fatalf("%d HelmReleases rendered, want %d", releases, n)
	}
	return tree
}

// scaleCAPIStartup is how long each simulated machine of the sample takes to come up.
const scaleCAPIStartup = 3 * time.Second

// sampleCluster makes a scale cluster one that goes through the real Cluster API
// controllers: one control-plane machine, two workers, RSA CAs (withMagnumCAs).
func sampleCluster(t *testing.T, ev map[string]any) map[string]any {
	ev = withMagnumCAs(t, ev)
	setPath(ev, 1, "cluster", "master_count")
	setPath(ev, 2, "cluster", "node_count")
	for _, g := range ev["nodegroups"].([]any) {
		ng := g.(map[string]any)
		ng["node_count"] = map[string]any{"master": 1, "worker": 2}[ng["role"].(string)]
	}
	return ev
}

// renderBranchFlux renders, into dir/branch-flux, the Flux objects of the
// branch-per-namespace layout: one cluster of each project with flux.layout set so.
func renderBranchFlux(t *testing.T, b *binaries, dir, config string, base map[string]any, n, projects int) {
	t.Helper()
	data, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	branchConfig := filepath.Join(dir, "config-branch.yaml")
	data = bytes.Replace(data, []byte("layout: per-namespace"), []byte("layout: "+generator.LayoutBranchPerNamespace), 1)
	if err := os.WriteFile(branchConfig, data, 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "branch-render")
	for p := range min(projects, n) {
		ev := deepCopy(base).(map[string]any)
		project := fmt.Sprintf("%032x", p+1)
		setPath(ev, project, "context", "project_id")
		setPath(ev, project, "cluster", "project_id")
		data, err := yaml.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(b.magnum, "render", "-f", "-", "--config", branchConfig, "--out-dir", out)
		cmd.Stdin = bytes.NewReader(data)
		if o, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("render project %d: %v\n%s", p, err, o)
		}
	}
	if err := os.Rename(filepath.Join(out, fluxPath, generator.FluxDir), filepath.Join(dir, "branch-flux")); err != nil {
		t.Fatal(err)
	}
}

// copySeedTree copies the pre-rendered clusters into the seed checkout, pointing the
// HelmRepository at this harness's chart server and the per-namespace GitRepositories at
// its Git server; the single layout leaves <path>/flux out.
func (h *harness) copySeedTree(seed string) {
	src := filepath.Join(h.seedTree, fluxPath)
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if rel == "flux" && !h.perNamespace {
			return filepath.SkipDir // the single layout's files are the others
		}
		// TestE2EScale renders the per-namespace layout once and keeps the branch layout's
		// Flux objects beside it; TestE2EArgoScale's Argo tree is rendered in its layout.
		if strings.HasPrefix(rel, "flux"+string(filepath.Separator)) && h.branchPerNamespace && !h.argo {
			path = filepath.Join(h.seedTree, "..", "branch-flux", strings.TrimPrefix(rel, "flux"+string(filepath.Separator)))
		}
		dst := filepath.Join(seed, fluxPath, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		data = bytes.ReplaceAll(data, []byte(chartURLPlaceholder), []byte(h.chartURL+"/"))
		data = bytes.ReplaceAll(data, []byte(gitURLPlaceholder), []byte(h.gitURL))
		return os.WriteFile(dst, data, 0o644)
	})
	if err != nil {
		h.t.Fatal(err)
	}
}

// waitAllApplied waits for the harness's wantKustomizations Kustomizations to apply
// revision, and returns when the last did.
func (h *harness) waitAllApplied(revision string, timeout time.Duration) time.Time {
	h.t.Helper()
	want := "main@sha1:" + revision
	return h.waitFor(fmt.Sprintf("%d Kustomizations to apply %s", h.wantKustomizations, want), timeout, func() (bool, string) {
		l := h.list(gvkKustomization, fluxNamespace)
		var waiting []string
		applied := 0
		for _, k := range l {
			if rev, _, _ := unstructured.NestedString(k.Object, "status", "lastAppliedRevision"); rev == want || h.publishes(k.GetName(), rev, revision) {
				applied++
				continue
			}
			st, reason, msg, _ := condition(&k, "Ready")
			waiting = append(waiting, fmt.Sprintf("%s (Ready=%s %s: %.200s)", k.GetName(), st, reason, msg))
		}
		if len(waiting) > 3 {
			waiting = append(waiting[:3], fmt.Sprintf("and %d more", len(waiting)-3))
		}
		return applied >= h.wantKustomizations, fmt.Sprintf("%d of %d applied; %s", applied, h.wantKustomizations, strings.Join(waiting, "; "))
	})
}

// runScale starts a harness with the pre-rendered tree in a layout, then changes one
// cluster `changes` times, measuring each.
func runScale(t *testing.T, b *binaries, id *age.X25519Identity, tree, name string, projects, changes, sample int) scaleResult {
	want := 1
	perNamespace := name != generator.LayoutSingle
	if perNamespace {
		want = projects + 1
	}
	start := time.Now()
	h := newHarness(t, b, true, func(h *harness) {
		h.ageIdentity, h.seedTree, h.noServe, h.seedTimeout = id, tree, true, 90*time.Minute
		h.perNamespace, h.wantKustomizations = perNamespace, want
		h.branchPerNamespace = name == generator.LayoutBranchPerNamespace
		if sample > 0 {
			h.clusterAPI, h.capiStartup = true, scaleCAPIStartup
		}
		// One build of every cluster takes longer than deploy/flux's 5m timeout here.
		h.adjustRoot = func(k *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(k.Object, "60m", "spec", "timeout")
		}
	})
	res := scaleResult{layout: name, kustomizations: want, firstSync: time.Since(start)}
	t.Logf("%s: %d Kustomizations applied the first commit after %s", name, want, res.firstSync.Round(time.Second))

	// The changed cluster: the first one of the first namespace.
	nsDirs, _ := os.ReadDir(filepath.Join(tree, fluxPath))
	var ns, release string
	for _, e := range nsDirs {
		if e.IsDir() && e.Name() != "sources" && e.Name() != "flux" {
			ns = e.Name()
			break
		}
	}
	clusters, _ := os.ReadDir(filepath.Join(tree, fluxPath, ns))
	for _, c := range clusters {
		if c.IsDir() {
			release = c.Name()
			break
		}
	}
	// The Kustomization that applies the cluster, and the GitRepository serve asks to
	// reconcile after a push that changed only that cluster.
	owner := sourceName
	if h.perNamespace {
		owner = magnum.FluxObjectName(ns)
	}
	work := filepath.Join(h.work, "change")
	h.git("", "clone", "-q", h.gitDir, work)
	h.git(work, "config", "user.name", "e2e")
	h.git(work, "config", "user.email", "e2e@magnum-gitops.invalid")
	hrFile := filepath.Join(work, fluxPath, ns, release, "helmrelease.yaml")
	for i := 1; i <= changes; i++ {
		data, err := os.ReadFile(hrFile)
		if err != nil {
			t.Fatal(err)
		}
		// A metadata change: one object differs, nothing for helm-controller to do.
		s := string(data)
		if i == 1 {
			s = strings.Replace(s, "\n  annotations:\n", "\n  annotations:\n    e2e.magnum-gitops.io/change: \"1\"\n", 1)
		} else {
			s = strings.Replace(s, fmt.Sprintf("e2e.magnum-gitops.io/change: \"%d\"", i-1), fmt.Sprintf("e2e.magnum-gitops.io/change: \"%d\"", i), 1)
		}
		if err := os.WriteFile(hrFile, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		reqBefore := h.apiRequests()
		cpuBefore, srcBefore, bytesBefore := h.cpuSeconds("kustomize-controller"), h.cpuSeconds("source-controller"), h.gitBytes.Load()
		var rev string
		if h.branchPerNamespace {
			// As serve pushes: the commit and the namespace's branch at once.
			rel := filepath.ToSlash(filepath.Join(fluxPath, ns, release, "helmrelease.yaml"))
			res, err := h.publisher().Apply(h.ctx, gitrepo.Change{Subject: fmt.Sprintf("change %d", i), Files: map[string][]byte{rel: []byte(s)}})
			if err != nil {
				t.Fatal(err)
			}
			rev = res.Commit.String()
		} else {
			h.git(work, "commit", "-q", "-am", fmt.Sprintf("change %d", i))
			h.git(work, "push", "-q", "origin", "HEAD:main")
			rev = strings.TrimSpace(h.git(work, "rev-parse", "HEAD"))
		}
		pushed := time.Now()
		// What serve does after a push (serve.reconcile_request).
		h.reconcileNow(gvkGitRepository, owner)
		done := h.waitFor(fmt.Sprintf("Kustomization %s to apply %s", owner, rev), 60*time.Minute, func() (bool, string) {
			k, ok := h.get(gvkKustomization, fluxNamespace, owner)
			if !ok {
				return false, "no Kustomization"
			}
			applied, _, _ := unstructured.NestedString(k.Object, "status", "lastAppliedRevision")
			return applied == "main@sha1:"+rev || h.publishes(owner, applied, rev), "applied " + applied
		})
		res.changed = append(res.changed, done.Sub(pushed))
		res.requests = append(res.requests, h.apiRequests()-reqBefore)
		res.kustomizeCPU = append(res.kustomizeCPU, h.cpuSeconds("kustomize-controller")-cpuBefore)
		res.sourceCPU = append(res.sourceCPU, h.cpuSeconds("source-controller")-srcBefore)
		res.fetchedMiB = append(res.fetchedMiB, float64(h.gitBytes.Load()-bytesBefore)/(1<<20))
		hr, ok := h.get(gvkHelmRelease, ns, release)
		if !ok || hr.GetAnnotations()["e2e.magnum-gitops.io/change"] != strconv.Itoa(i) {
			t.Fatalf("change %d did not reach HelmRelease %s/%s", i, ns, release)
		}
		t.Logf("%s, change %d: applied after %s; %.0f API requests, kustomize-controller %.1fs CPU, source-controller %.1fs CPU, %.1f MiB fetched",
			name, i, res.changed[i-1].Round(time.Millisecond), res.requests[i-1], res.kustomizeCPU[i-1], res.sourceCPU[i-1], res.fetchedMiB[i-1])
	}
	h.intervalTick(&res)
	res.repoMiB = float64(dirBytes(h.gitDir)) / (1 << 20)
	res.sourceRSS = h.peakRSSMiB("source-controller")
	if sample > 0 {
		res.sample = h.letSampleGo(t, work, tree, sample)
	}
	t.Logf("%s: one interval of every GitRepository after a commit: %s, source-controller %.1fs CPU, %.1f MiB fetched (repository %.1f MiB packed; source-controller peak RSS %.0f MiB)",
		name, res.tick.Round(time.Millisecond), res.tickCPU, res.tickMiB, res.repoMiB, res.sourceRSS)
	return res
}

// letSampleGo commits, in one commit, the sample's HelmReleases without suspend (the
// first cluster of each of the first sample namespaces, as renderScaleTree made them),
// asks the namespaces' GitRepositories (or the root) to fetch as serve would, and waits
// until each cluster is Available with every machine up through the real Cluster API
// controllers. It returns how long that took.
func (h *harness) letSampleGo(t *testing.T, work, tree string, sample int) time.Duration {
	t.Helper()
	files := map[string][]byte{}
	type member struct{ ns, release string }
	var members []member
	for i := range sample {
		ns, release := "magnum-"+fmt.Sprintf("%032x", i+1), fmt.Sprintf("c%05d-%012x", i, i+1)
		rel := filepath.ToSlash(filepath.Join(fluxPath, ns, release, "helmrelease.yaml"))
		data, err := os.ReadFile(filepath.Join(work, rel))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(data, []byte("\n  suspend: true\n")) {
			t.Fatalf("%s is not suspended", rel)
		}
		files[rel] = bytes.Replace(data, []byte("\n  suspend: true\n"), []byte("\n"), 1)
		members = append(members, member{ns, release})
	}
	start := time.Now()
	if h.branchPerNamespace {
		if _, err := h.publisher().Apply(h.ctx, gitrepo.Change{Subject: "let the sample go", Files: files}); err != nil {
			t.Fatal(err)
		}
	} else {
		for rel, data := range files {
			if err := os.WriteFile(filepath.Join(work, rel), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		h.git(work, "commit", "-q", "-am", "let the sample go")
		h.git(work, "push", "-q", "origin", "HEAD:main")
	}
	for _, m := range members {
		h.reconcileNow(gvkGitRepository, h.fluxFor(m.ns))
	}
	for _, m := range members {
		h.waitFor(fmt.Sprintf("sample cluster %s/%s Available", m.ns, m.release), 30*time.Minute,
			h.capiSettled(m.ns, m.release, 1, map[string]int64{"default-worker": 2}))
	}
	return time.Since(start)
}

// intervalTick asks every GitRepository to reconcile, as each does at flux.interval, once
// a commit has moved main past what they hold, and waits until each has handled the
// request and holds the head of the branch it follows: what an interval costs
// source-controller and the Git server.
func (h *harness) intervalTick(res *scaleResult) {
	repos := h.list(gvkGitRepository, fluxNamespace)
	heads := map[string]string{}
	for _, g := range repos {
		branch, _, _ := unstructured.NestedString(g.Object, "spec", "ref", "branch")
		heads[g.GetName()] = strings.TrimSpace(h.git(h.gitDir, "rev-parse", "refs/heads/"+branch))
	}
	cpu, sent, start := h.cpuSeconds("source-controller"), h.gitBytes.Load(), time.Now()
	asked := map[string]string{}
	for _, g := range repos {
		h.reconcileNow(gvkGitRepository, g.GetName())
		asked[g.GetName()] = h.requestedAt(g.GetName())
	}
	h.waitFor(fmt.Sprintf("%d GitRepositories to fetch their branches' heads", len(repos)), 60*time.Minute, func() (bool, string) {
		behind := 0
		for _, g := range h.list(gvkGitRepository, fluxNamespace) {
			rev, _, _ := unstructured.NestedString(g.Object, "status", "artifact", "revision")
			handled, _, _ := unstructured.NestedString(g.Object, "status", "lastHandledReconcileAt")
			if !strings.HasSuffix(rev, heads[g.GetName()]) || handled != asked[g.GetName()] {
				behind++
			}
		}
		return behind == 0, fmt.Sprintf("%d of %d behind", behind, len(repos))
	})
	res.tick, res.tickCPU = time.Since(start), h.cpuSeconds("source-controller")-cpu
	res.tickMiB = float64(h.gitBytes.Load()-sent) / (1 << 20)
}

// peakRSSMiB is the peak resident memory (VmHWM) of one of the harness's processes.
func (h *harness) peakRSSMiB(name string) float64 {
	pid, ok := h.pidOf(name)
	if !ok {
		return 0
	}
	return peakRSSMiBOf(pid)
}

// pidOf is the process ID of the harness's process named.
func (h *harness) pidOf(name string) (int, bool) {
	for _, p := range h.procs {
		if p.name == name {
			return p.cmd.Process.Pid, true
		}
	}
	return 0, false
}

// dirBytes is the size of the files under dir.
func dirBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// apiRequests is the API server's apiserver_request_total summed over every label.
func (h *harness) apiRequests() float64 {
	total := 0.0
	for _, v := range h.apiRequestsBy() {
		total += v
	}
	return total
}

// cpuSeconds is the user+system CPU time of one of the harness's processes.
func (h *harness) cpuSeconds(name string) float64 {
	pid, ok := h.pidOf(name)
	if !ok {
		return 0
	}
	own, _ := cpuSecondsOf(pid)
	return own
}

func medianFloat(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
