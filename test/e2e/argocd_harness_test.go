//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv/argocd"
	"github.com/magnum-gitops/magnum-gitops/magnum"
)

// The harness's Argo CD mode (withArgoCD): real Argo CD in place of Flux, as
// docs/management-cluster.md installs it for format argo. The parent Application is
// deploy/argocd/application.yaml with the test's repository, its source the sops plugin
// (deploy/argocd/sops-plugin.yaml, run by argocd-cmp-server with the harness's age key);
// argocd-cm builds kustomize with --enable-helm, so that the clusters' Applications with
// chart patches (generator/argo.go) inflate the chart with kustomize; the repo-server finds
// helm in Argo CD's directory (hack/argocd.sh) and kustomize in hack/kustomize.sh's.

// argoParentName is the parent Application of deploy/argocd/application.yaml.
const argoParentName = "magnum-clusters"

// argoRepoSecret is the repository Secret that gives Argo CD the Git server's credentials.
const argoRepoSecret = "magnum-clusters-repo"

// withArgoCD runs Argo CD instead of Flux.
func withArgoCD() harnessOption {
	return func(h *harness) { h.argo = true }
}

// kustomizeDir is where hack/kustomize.sh keeps kustomize: KUSTOMIZE_BIN, or its cache.
func (h *harness) kustomizeDir() string {
	dir := testenv.BinDir("KUSTOMIZE_BIN", "kustomize", "v5.8.2")
	if fi, err := os.Stat(filepath.Join(dir, "kustomize")); err != nil || fi.Mode()&0o111 == 0 {
		unavailable(h.t, "kustomize is missing in %q (KUSTOMIZE_BIN): run hack/kustomize.sh", dir)
	}
	return dir
}

// startArgoCD runs Argo CD against the harness's API server (internal/testenv/argocd),
// decrypting with the harness's age identity, with kustomize's Helm support on.
func (h *harness) startArgoCD() {
	t := h.t
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(h.env.Config)
	cfg.WarningHandlerWithContext = rest.NoWarnings{}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	kc, err := os.ReadFile(h.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	h.argoCD = argocd.StartOn(t, argocd.External{
		Client: c, KubeConfig: kc, Path: h.kustomizeDir(),
		ArgoCDCM: map[string]string{"kustomize.buildOptions": "--enable-helm"},
	}, argocd.Options{AgeIdentity: h.ageIdentity.String()})
}

// applyArgoParent creates what an operator creates for format argo: the repository Secret
// with the Git server's credentials and the parent Application of deploy/argocd, its
// repository the harness's, syncing flux.path through the sops plugin.
func (h *harness) applyArgoParent() {
	t := h.t
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: argoRepoSecret, Namespace: argocd.Namespace,
			Labels: map[string]string{"argocd.argoproj.io/secret-type": "repository"}},
		StringData: map[string]string{"type": "git", "url": h.gitURL, "username": h.gitUsername(), "password": h.gitPassword},
	}
	if err := h.c.Create(h.ctx, secret); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(testenv.RepoRoot(), "deploy", "argocd", "application.yaml")
	set := map[string][]string{
		h.gitURL: {"spec", "source", "repoURL"}, "main": {"spec", "source", "targetRevision"},
		h.fluxPath: {"spec", "source", "path"}, argocd.SOPSPlugin: {"spec", "source", "plugin", "name"},
	}
	if h.perNamespace {
		// The root of deploy/argocd/per-namespace: the namespaces' parent Applications the
		// generator writes under <path>/flux, a plain directory.
		file = filepath.Join(testenv.RepoRoot(), "deploy", "argocd", "per-namespace", "application.yaml")
		dir := path.Join(h.fluxPath, generator.FluxDir)
		set = map[string][]string{h.gitURL: {"spec", "source", "repoURL"}, "main": {"spec", "source", "targetRevision"},
			dir: {"spec", "source", "path"}}
		if h.branchPerNamespace {
			// deploy/argocd/branch-per-namespace: the branch that publishes <path>/flux.
			file = filepath.Join(testenv.RepoRoot(), "deploy", "argocd", "branch-per-namespace", "application.yaml")
			set = map[string][]string{h.gitURL: {"spec", "source", "repoURL"}, generator.PublishedBranch(dir): {"spec", "source", "targetRevision"},
				dir: {"spec", "source", "path"}}
		}
	}
	objs := readObjects(t, file)
	if len(objs) != 1 || objs[0].GroupVersionKind() != argocd.ApplicationGVK || objs[0].GetName() != argoParentName {
		t.Fatalf("%s: want the one Application %s", file, argoParentName)
	}
	app := objs[0]
	for v, path := range set {
		if err := unstructured.SetNestedField(app.Object, v, path...); err != nil {
			t.Fatal(err)
		}
	}
	unstructured.RemoveNestedField(app.Object, "spec", "source", "directory")
	if err := h.c.Create(h.ctx, app); err != nil {
		t.Fatalf("%s: creating the Application: %v", file, err)
	}
}

// application reads an Application in Argo CD's namespace.
func (h *harness) application(name string) (*unstructured.Unstructured, bool) {
	return h.get(argocd.ApplicationGVK, argocd.Namespace, name)
}

// waitArgoSynced waits for the parent Application to have synced revision (Synced at it,
// its last sync operation done) and returns when.
func (h *harness) waitArgoSynced(revision string, timeout time.Duration) time.Time {
	h.t.Helper()
	return h.waitArgoSyncedBy(argoParentName, revision, timeout)
}

// argoRootRevision is the revision the root Application syncs once main is at revision:
// revision, or in the branch-per-namespace layout the head of the branch that publishes
// <path>/flux, which the root follows.
func (h *harness) argoRootRevision(revision string) string {
	if h.branchPerNamespace {
		return h.publishedHead(generator.FluxDir)
	}
	return revision
}

// waitArgoSyncedIn waits for the Application that syncs a project namespace to have
// synced revision: the parent, or in the per-namespace layout the namespace's own.
func (h *harness) waitArgoSyncedIn(namespace, revision string, timeout time.Duration) time.Time {
	h.t.Helper()
	if h.perNamespace {
		return h.waitArgoSyncedBy(magnum.FluxObjectName(namespace), revision, timeout)
	}
	return h.waitArgoSynced(revision, timeout)
}

func (h *harness) waitArgoSyncedBy(name, revision string, timeout time.Duration) time.Time {
	h.t.Helper()
	return h.waitFor("Argo CD to sync "+name+" at "+revision, timeout, func() (bool, string) {
		app, ok := h.application(name)
		if !ok {
			return false, "no Application " + name
		}
		return argoSyncedAt(app, revision)
	})
}

// argoSyncedAt reports whether Argo CD has applied revision with an Application, as Flux's
// lastAppliedRevision says it: its last sync operation succeeded at revision, or it is
// Synced at revision with no sync running (a commit that changes nothing it renders, the
// seed's README, makes no operation); and if not, what it shows. A sync that pruned a
// cluster's Application leaves the parent OutOfSync while Argo CD deletes the cluster.
func argoSyncedAt(app *unstructured.Unstructured, revision string) (bool, string) {
	sync, _, _ := unstructured.NestedString(app.Object, "status", "sync", "status")
	rev, _, _ := unstructured.NestedString(app.Object, "status", "sync", "revision")
	phase, _, _ := unstructured.NestedString(app.Object, "status", "operationState", "phase")
	opRev, _, _ := unstructured.NestedString(app.Object, "status", "operationState", "syncResult", "revision")
	msg, _, _ := unstructured.NestedString(app.Object, "status", "operationState", "message")
	var conds []string
	list, _, _ := unstructured.NestedSlice(app.Object, "status", "conditions")
	for _, c := range list {
		if m, ok := c.(map[string]any); ok {
			conds = append(conds, fmt.Sprintf("%v: %v", m["type"], m["message"]))
		}
	}
	state := fmt.Sprintf("sync %s at %.12s, operation %s at %.12s (%s), conditions %v", sync, rev, phase, opRev, msg, conds)
	synced := sync == "Synced" && rev == revision && (phase == "" || phase == "Succeeded" || phase == "Failed" || phase == "Error")
	return synced || (phase == "Succeeded" && opRev == revision), state
}

// dumpApplications logs every Application's spec.source and status, for a failing test.
func (h *harness) dumpApplications() {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(argocd.ApplicationGVK.GroupVersion().WithKind("ApplicationList"))
	if err := h.c.List(context.Background(), l, client.InNamespace(argocd.Namespace)); err != nil {
		h.t.Logf("listing Applications: %v", err)
		return
	}
	var b strings.Builder
	for _, o := range l.Items {
		src, _, _ := unstructured.NestedFieldNoCopy(o.Object, "spec", "source")
		st, _, _ := unstructured.NestedFieldNoCopy(o.Object, "status")
		y, _ := yaml.Marshal(map[string]any{"source": src, "status": st})
		fmt.Fprintf(&b, "--- Application %s\n%s", o.GetName(), y)
	}
	h.t.Logf("Argo CD Applications at failure:\n%s", b.String())
}
