package service

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/magnum-gitops/magnum-gitops/reconciler"
)

// ReconcileRequestAnnotation is Flux's "reconcile now" annotation (meta.ReconcileRequestAnnotation):
// `flux reconcile source git` and a Flux Receiver set it to the current time, and
// source-controller fetches the repository as soon as the value changes.
const ReconcileRequestAnnotation = "reconcile.fluxcd.io/requestedAt"

// gitRepositoryGVK is the Flux source the requests annotate.
var gitRepositoryGVK = schema.GroupVersionKind{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "GitRepository"}

// ReconcileRequest names the Flux GitRepository (namespace/name) to annotate after each
// push, so that a commit reaches the cluster in about a second instead of up to one
// GitRepository interval later. The zero value requests nothing.
type ReconcileRequest struct {
	Namespace string
	Name      string
}

// Enabled reports whether a GitRepository is named.
func (r ReconcileRequest) Enabled() bool { return r.Name != "" }

// String is namespace/name, as in Flux's own messages.
func (r ReconcileRequest) String() string { return r.Namespace + "/" + r.Name }

// reconcileRequester annotates the GitRepository after pushes. Requests coalesce: pushes
// that happen while a patch is in flight cause one more patch, not one each, so a burst of
// group commits costs the API server a few writes, and an unreachable API server never
// delays the answer to an event (source-controller still polls at its interval).
type reconcileRequester struct {
	kube    client.Client
	target  ReconcileRequest
	log     *slog.Logger
	now     func() time.Time
	pending chan struct{}

	mu        sync.Mutex
	requested map[string]struct{} // revisions already requested
}

func newReconcileRequester(kube client.Client, target ReconcileRequest, log *slog.Logger) *reconcileRequester {
	return &reconcileRequester{kube: kube, target: target, log: log, now: time.Now, pending: make(chan struct{}, 1),
		requested: map[string]struct{}{}}
}

// request asks for a reconcile after a push; it never blocks.
func (r *reconcileRequester) request() {
	if r == nil {
		return
	}
	select {
	case r.pending <- struct{}{}:
	default: // one is already pending; it will see this push too
	}
}

// run patches the GitRepository for every pending request until ctx ends.
func (r *reconcileRequester) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.pending:
		}
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := r.patch(pctx)
		cancel()
		if err != nil {
			r.log.Warn("requesting a Flux reconcile of the GitRepository; Flux picks the commit up at its interval instead",
				"gitrepository", r.target.String(), "error", err)
		}
	}
}

// patch sets the annotation the way the flux CLI does: a merge patch of metadata only, so
// it neither conflicts with nor bumps the object's generation.
func (r *reconcileRequester) patch(ctx context.Context) error {
	o := &unstructured.Unstructured{}
	o.SetGroupVersionKind(gitRepositoryGVK)
	o.SetNamespace(r.target.Namespace)
	o.SetName(r.target.Name)
	body := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, ReconcileRequestAnnotation, r.now().Format(time.RFC3339Nano))
	if err := r.kube.Patch(ctx, o, client.RawPatch(types.MergePatchType, []byte(body))); err != nil {
		return fmt.Errorf("GitRepository %s: %w", r.target, err)
	}
	return nil
}

// observe records an answered event and, after a pushed commit, asks Flux to fetch it.
// Commits to a review branch wait for their merge instead, and a retried event (answered
// from the ledger with the commit it was first answered with) asks nothing again.
func (s *Service) observe(sum reconciler.Summary, group int, took time.Duration) {
	s.m.observe(sum, group, took)
	if sum.Outcome == reconciler.OutcomeCommitted && sum.Revision != "" && sum.PullRequestURL == "" &&
		s.requester.newRevision(sum.Revision) {
		s.requester.request()
	}
}

// newRevision reports whether no request was made for revision yet; the events of one
// group commit share it. The memory is bounded: forgetting only costs a redundant request.
func (r *reconcileRequester) newRevision(revision string) bool {
	if r == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.requested[revision]; ok {
		return false
	}
	if len(r.requested) >= 4096 {
		clear(r.requested)
	}
	r.requested[revision] = struct{}{}
	return true
}
