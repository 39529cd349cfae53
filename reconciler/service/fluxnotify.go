package service

import (
	"context"
	"fmt"
	"log/slog"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/magnum"
)

// ReconcileRequestAnnotation is Flux's "reconcile now" annotation (meta.ReconcileRequestAnnotation):
// `flux reconcile source git` and a Flux Receiver set it to the current time, and
// source-controller fetches the repository as soon as the value changes.
const ReconcileRequestAnnotation = "reconcile.fluxcd.io/requestedAt"

// ArgoRefreshAnnotation is Argo CD's "refresh now" annotation: `argocd app get --refresh`
// and Argo CD's Git webhook handler ask for a refresh this way, and the application
// controller compares the Application with its branch's newest commit at once, then
// removes the annotation. "normal" re-resolves the branch without dropping the cached
// manifests of unchanged commits ("hard" would render every cluster again).
const ArgoRefreshAnnotation = "argocd.argoproj.io/refresh"

// gitRepositoryGVK is the Flux source the requests annotate; argoApplicationGVK the Argo
// CD Application in Argo mode.
var (
	gitRepositoryGVK   = schema.GroupVersionKind{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "GitRepository"}
	argoApplicationGVK = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Application"}
)

// ReconcileRequest names the Flux GitRepository (namespace/name) to annotate after each
// push, so that a commit reaches the cluster in about a second instead of up to one
// GitRepository interval later; in the per-namespace layout, the root GitRepository, next
// to each changed namespace's own. In Argo mode it names the Application that syncs the
// repository (the parent of deploy/argocd), which is refreshed instead of waiting for
// Argo CD's reconciliation period (timeout.reconciliation, 120 s by default) or a Git
// webhook. The zero value requests nothing.
type ReconcileRequest struct {
	Namespace string
	Name      string
}

// Enabled reports whether a GitRepository is named.
func (r ReconcileRequest) Enabled() bool { return r.Name != "" }

// String is namespace/name, as in Flux's own messages.
func (r ReconcileRequest) String() string { return r.Namespace + "/" + r.Name }

// reconcileRequester annotates GitRepositories after pushes. Requests coalesce: pushes
// that happen while patches are in flight cause one more patch per GitRepository, not one
// each, so a burst of group commits costs the API server a few writes, and an unreachable
// API server never delays the answer to an event (source-controller still polls at its
// interval).
//
// In the per-namespace layouts (generator.FluxConfig.PerNamespace) a push asks the GitRepository
// (in Argo mode, the parent Application) of each namespace it changed, and the root one
// (target) only when it changed what the root applies (<path>/flux, <path>/sources): the
// other namespaces are not rebuilt for it.
type reconcileRequester struct {
	kube   client.Client
	target ReconcileRequest
	// argo is set in Argo mode: the target is an Application, refreshed.
	argo bool
	// perNamespace is the namespace of the per-namespace GitRepositories (in Argo mode,
	// parent Applications: generator.Config.LayoutNamespace); empty in the single layout.
	// rootPaths are the path prefixes the root GitRepository applies.
	perNamespace string
	rootPaths    []string
	log          *slog.Logger
	now          func() time.Time
	wake         chan struct{}

	mu      sync.Mutex
	pending map[types.NamespacedName]struct{}
}

func newReconcileRequester(kube client.Client, target ReconcileRequest, root string, cfg *generator.Config, log *slog.Logger) *reconcileRequester {
	r := &reconcileRequester{kube: kube, target: target, argo: cfg.Format == generator.FormatArgo, log: log, now: time.Now,
		wake: make(chan struct{}, 1), pending: map[types.NamespacedName]struct{}{}}
	if r.perNamespace = cfg.LayoutNamespace(); r.perNamespace != "" {
		r.rootPaths = []string{path.Join(root, generator.FluxDir) + "/", path.Join(root, generator.SourcesDir) + "/"}
	}
	return r
}

// request asks for a reconcile of what a push changed in namespace (paths: the changed
// paths, nil when unknown); it never blocks.
func (r *reconcileRequester) request(namespace string, paths []string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	for _, t := range r.targets(namespace, paths) {
		r.pending[t] = struct{}{}
	}
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default: // a wake-up is already pending; it will see these too
	}
}

// targets are the GitRepositories that fetch a change to namespace.
func (r *reconcileRequester) targets(namespace string, paths []string) []types.NamespacedName {
	root := types.NamespacedName{Namespace: r.target.Namespace, Name: r.target.Name}
	if r.perNamespace == "" || namespace == "" {
		return []types.NamespacedName{root}
	}
	out := []types.NamespacedName{{Namespace: r.perNamespace, Name: magnum.FluxObjectName(namespace)}}
	for _, p := range paths {
		if slices.ContainsFunc(r.rootPaths, func(prefix string) bool { return strings.HasPrefix(p, prefix) }) {
			return append(out, root)
		}
	}
	return out
}

// run patches every pending GitRepository until ctx ends.
func (r *reconcileRequester) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
		}
		r.mu.Lock()
		batch := make([]types.NamespacedName, 0, len(r.pending))
		for t := range r.pending {
			batch = append(batch, t)
		}
		clear(r.pending)
		r.mu.Unlock()
		slices.SortFunc(batch, func(a, b types.NamespacedName) int { return strings.Compare(a.String(), b.String()) })
		for _, t := range batch {
			pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err := r.patch(pctx, t)
			cancel()
			switch {
			case err == nil:
			case apierrors.IsNotFound(err) && t.Namespace == r.perNamespace && t.Name != r.target.Name:
				// A new namespace's GitRepository (or parent Application): the root applies
				// it, and it fetches when created.
				r.log.Debug("nothing applies the namespace yet", "object", t.String())
			case r.argo:
				r.log.Warn("requesting an Argo CD refresh of the Application; Argo CD picks the commit up at its reconciliation period instead",
					"application", t.String(), "error", err)
			default:
				r.log.Warn("requesting a Flux reconcile of the GitRepository; Flux picks the commit up at its interval instead",
					"gitrepository", t.String(), "error", err)
			}
		}
	}
}

// patch sets the annotation the way the flux (or argocd) CLI does: a merge patch of
// metadata only, so it neither conflicts with nor bumps the object's generation.
func (r *reconcileRequester) patch(ctx context.Context, t types.NamespacedName) error {
	o := &unstructured.Unstructured{}
	gvk, key, value := gitRepositoryGVK, ReconcileRequestAnnotation, r.now().Format(time.RFC3339Nano)
	if r.argo {
		gvk, key, value = argoApplicationGVK, ArgoRefreshAnnotation, "normal"
	}
	o.SetGroupVersionKind(gvk)
	o.SetNamespace(t.Namespace)
	o.SetName(t.Name)
	body := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, key, value)
	if err := r.kube.Patch(ctx, o, client.RawPatch(types.MergePatchType, []byte(body))); err != nil {
		return fmt.Errorf("%s %s: %w", gvk.Kind, t, err)
	}
	return nil
}
