//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
)

// wipeNamespace deletes a namespace and everything in it, playing the namespace
// controller (kube-controller-manager does not run here): every namespaced resource is
// deleted, finalizers left on anything after a grace period are stripped (their
// controllers may be gone in a real disaster), and the namespace is finalized.
func (h *harness) wipeNamespace(ns string) {
	t := h.t
	t.Helper()
	cfg := h.env.Config
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	lists, err := dc.ServerPreferredNamespacedResources()
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	var gvrs []schema.GroupVersionResource
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") || !slices.Contains(r.Verbs, "delete") {
				continue
			}
			gvrs = append(gvrs, gv.WithResource(r.Name))
		}
	}
	if err := h.c.Delete(h.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatalf("deleting namespace %s: %v", ns, err)
	}
	start := time.Now()
	h.waitFor("namespace "+ns+" to be emptied", 3*time.Minute, func() (bool, string) {
		var left []string
		for _, gvr := range gvrs {
			l, err := dyn.Resource(gvr).Namespace(ns).List(h.ctx, metav1.ListOptions{})
			if err != nil {
				continue // a kind that cannot be listed holds nothing the test made
			}
			for _, o := range l.Items {
				left = append(left, gvr.Resource+"/"+o.GetName())
				if o.GetDeletionTimestamp() == nil {
					_ = dyn.Resource(gvr).Namespace(ns).Delete(h.ctx, o.GetName(), metav1.DeleteOptions{})
				} else if len(o.GetFinalizers()) > 0 && time.Since(start) > 20*time.Second {
					// Controllers had their chance (helm-controller uninstalls a deleted HelmRelease).
					_, _ = dyn.Resource(gvr).Namespace(ns).Patch(h.ctx, o.GetName(), types.MergePatchType,
						[]byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
				}
			}
		}
		return len(left) == 0, fmt.Sprintf("left: %v", left)
	})
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	n, err := cs.CoreV1().Namespaces().Get(h.ctx, ns, metav1.GetOptions{})
	if err == nil {
		n.Spec.Finalizers = nil
		if _, err := cs.CoreV1().Namespaces().Finalize(h.ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("finalizing namespace %s: %v", ns, err)
		}
	}
	h.waitFor("namespace "+ns+" to be gone", time.Minute, func() (bool, string) {
		err := h.c.Get(h.ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}

// capiState is what the chart installed for a cluster, by kind/name: each object's spec,
// and each Secret's type and data.
func (h *harness) capiState(w clusterWant) map[string]string {
	out := map[string]string{}
	for _, gvk := range []schema.GroupVersionKind{gvkCluster, gvkKCP, gvkMachineDeployment, gvkOpenStackCluster, gvkOSMT} {
		for _, o := range h.list(gvk, w.namespace) {
			spec, _, _ := unstructured.NestedFieldNoCopy(o.Object, "spec")
			b, _ := json.Marshal(spec)
			out[gvk.Kind+"/"+o.GetName()] = string(b)
		}
	}
	var secrets corev1.SecretList
	if err := h.c.List(h.ctx, &secrets, client.InNamespace(w.namespace)); err != nil {
		h.t.Fatal(err)
	}
	for _, s := range secrets.Items {
		if s.Labels["owner"] == "helm" {
			continue // Helm's release storage starts again at v1
		}
		b, _ := json.Marshal(map[string]any{"type": s.Type, "data": s.Data})
		out["Secret/"+s.Name] = string(b)
	}
	return out
}

// TestE2EDisasterRecovery: two clusters' namespaces are wiped from the management cluster
// (HelmReleases, Helm storage, CAPI objects, Secrets, the namespaces themselves). Flux
// alone, from what magnum-gitops committed, brings back the same CAPI objects (specs
// equal) and the same decrypted Secrets (data equal), with nothing sent to magnum-gitops.
// The operator's only action is `flux reconcile kustomization` (the annotation it sets):
// otherwise kustomize-controller would re-apply at its next interval (10m).
func TestE2EDisasterRecovery(t *testing.T) {
	b := findBinaries(t)
	h := newHarness(t, b, true)
	events := filepath.Join(testenv.RepoRoot(), "fixtures", "events")
	// The scenario's two clusters, in two projects' namespaces.
	a, d, ovn := twoClusters(t)
	ovnFile := writeEvent(t, t.TempDir(), "ovn-create.yaml", ovn)
	h.commitEvent(filepath.Join(events, "01-prod-a-create.yaml"))
	h.waitApplied(h.commitEvent(ovnFile), 3*time.Minute)
	wants := []clusterWant{a, d}
	before := map[string]map[string]string{}
	for _, w := range wants {
		h.waitFor("HelmRelease "+w.release+" Ready", defaultWaitStep, h.releaseReadyAnyChart(w))
		before[w.namespace] = h.capiState(w)
		if len(before[w.namespace]) < 10 {
			t.Fatalf("%s: only %d objects before the disaster", w.release, len(before[w.namespace]))
		}
	}

	start := time.Now()
	for _, w := range wants {
		h.wipeNamespace(w.namespace)
	}
	wiped := time.Now()
	t.Logf("namespaces %s and %s wiped in %s", a.namespace, d.namespace, wiped.Sub(start).Round(time.Millisecond))
	// `flux reconcile kustomization magnum-clusters`.
	h.reconcileNow(gvkKustomization, sourceName)
	for _, w := range wants {
		h.waitFor("HelmRelease "+w.release+" Ready again", defaultWaitStep, h.releaseReadyAnyChart(w))
		after := h.capiState(w)
		for key, was := range before[w.namespace] {
			if now, ok := after[key]; !ok {
				t.Errorf("%s: %s did not come back", w.release, key)
			} else if now != was {
				t.Errorf("%s: %s came back different:\nbefore %s\nafter  %s", w.release, key, was, now)
			}
		}
		for key := range after {
			if _, ok := before[w.namespace][key]; !ok {
				t.Errorf("%s: %s is new after the recovery", w.release, key)
			}
		}
		h.checkSecrets(w)
	}
	t.Logf("recovered from Git in %s: %d and %d objects and Secrets equal to before", time.Since(wiped).Round(time.Millisecond),
		len(before[a.namespace]), len(before[d.namespace]))
}

// releaseReadyAnyChart is releaseReady without the chart version and Helm revision
// bookkeeping of the scenario: Ready at the current generation, latest release deployed.
func (h *harness) releaseReadyAnyChart(w clusterWant) func() (bool, string) {
	return func() (bool, string) {
		hr, ok := h.get(gvkHelmRelease, w.namespace, w.release)
		if !ok {
			return false, "no HelmRelease " + w.namespace + "/" + w.release
		}
		st, reason, msg, og := condition(hr, "Ready")
		_, status := latestSnapshot(hr)
		return st == "True" && og == hr.GetGeneration() && status == "deployed",
			fmt.Sprintf("Ready=%s %s: %s; latest release %s", st, reason, msg, status)
	}
}
