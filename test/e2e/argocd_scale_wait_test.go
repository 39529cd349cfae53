//go:build e2e

package e2e

// TestE2EArgoScale's waits: Argo CD restarted with its reconciliation period, every
// cluster deployed, and what Argo CD did while idle.

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv/argocd"
	"github.com/magnum-gitops/magnum-gitops/magnum"
)

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
	seed := h.argoRootRevision(h.headRevision())
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

// argoParents are the parent Applications of an Argo run and the revision each must have
// synced: the one of deploy/argocd at rev; or the root and every project namespace's of
// tree, at rev, or in the branch layout each at the head of the branch it follows.
func (h *harness) argoParents(tree, parents, rev string) map[string]string {
	if parents == parentsOne {
		return map[string]string{argoParentName: rev}
	}
	out := map[string]string{argoParentName: rev}
	if parents == parentsBranch {
		out[argoParentName] = h.argoRootRevision(rev)
	}
	entries, err := os.ReadDir(filepath.Join(tree, fluxPath))
	if err != nil {
		h.t.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() || e.Name() == generator.FluxDir || e.Name() == generator.SourcesDir {
			continue
		}
		out[magnum.FluxObjectName(e.Name())] = rev
		if parents == parentsBranch {
			out[magnum.FluxObjectName(e.Name())] = h.publishedHead(e.Name())
		}
	}
	return out
}

// waitDeployed polls, every r.pollEvery, until the parents (name → the revision each must
// have synced; Flux: the root Kustomization at rev) have applied the commit and every one
// of r.n clusters is deployed (see TestE2EArgoScale), or wait has passed since pushed. In
// Argo mode it stops early when the repo-server has paused a parent's manifest generation
// after repeated failures (Argo CD tries it again only an hour later).
func (h *harness) waitDeployed(r *argoScaleResult, parents map[string]string, rev string, pushed time.Time, wait time.Duration) {
	deadline := pushed.Add(wait)
	lastLog := time.Now()
	for {
		r.polls++
		applied, _, deployed, states, why := h.scaleState(r.mode, parents, rev)
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

// scaleState reads whether the commit is applied (every parent Application synced its
// revision of it, or the root Kustomization applied rev), how many parents synced it, how many clusters are
// deployed, the count of each cluster state, and what the first parent not synced, or the
// root, shows.
func (h *harness) scaleState(mode string, parents map[string]string, rev string) (applied bool, synced, deployed int, states map[string]int, why string) {
	states = map[string]int{}
	if strings.HasPrefix(mode, generator.FormatArgo) {
		for _, app := range h.list(argocd.ApplicationGVK, argocd.Namespace) {
			if at, isParent := parents[app.GetName()]; isParent {
				ok, state := argoSyncedAt(&app, at)
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
