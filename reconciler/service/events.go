package service

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/reconciler"
)

// EventRecorder records Kubernetes Events (client-go's record.EventRecorder has this
// method): serve records them on each cluster's HelmRelease, beside helm-controller's own,
// so that `kubectl describe helmrelease` and `flux events` tell what serve committed for it
// and when its delete finished.
type EventRecorder interface {
	Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any)
}

// The reasons of serve's Events, in the CamelCase of Flux's.
const (
	// ReasonCommitted: a Magnum event's change was committed (or its pull request opened).
	ReasonCommitted = "Committed"
	// ReasonCommitFailed: a Magnum event's change was not committed; the message says why.
	ReasonCommitFailed = "CommitFailed"
	// ReasonDeleteFinished: a deleted cluster's Secrets were deleted and its directory
	// removed from Git: Magnum sees DELETE_COMPLETE.
	ReasonDeleteFinished = "DeleteFinished"
)

// kubeEvent is one Event to record on a cluster's HelmRelease.
type kubeEvent struct {
	m                 *managed
	namespace, name   string
	eventtype, reason string
	message           string
}

// events records Events off the path of the answer: looking up the HelmRelease's UID (so
// that `kubectl describe` finds the Event) is a request to the API server. When more
// than its queue waits, an Event is dropped: they are a courtesy, the logs and metrics
// keep the record.
type events struct {
	queue chan kubeEvent
	log   *slog.Logger
}

func newEvents(log *slog.Logger) *events { return &events{queue: make(chan kubeEvent, 256), log: log} }

// run records the queued Events until ctx ends.
func (e *events) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-e.queue:
			ev.m.Events.Eventf(helmReleaseRef(ctx, ev.m.Kube, ev.namespace, ev.name), ev.eventtype, ev.reason, "%s", ev.message)
		}
	}
}

func (e *events) add(ev kubeEvent) {
	if ev.m == nil || ev.m.Events == nil || ev.name == "" {
		return
	}
	select {
	case e.queue <- ev:
	default:
		e.log.Debug("kubernetes events: the queue is full; an event is dropped", "namespace", ev.namespace, "name", ev.name, "reason", ev.reason)
	}
}

// eventOfSummary is the Event of a reconcile's outcome: nothing for a change that was already
// there (a retry, or nothing to change), as Flux says nothing when nothing changed.
func (s *Service) eventOfSummary(sum reconciler.Summary) {
	if s.events == nil || sum.Replayed || sum.Outcome == reconciler.OutcomeUnchanged || sum.NoOp {
		return
	}
	ev := kubeEvent{m: s.at(sum.Root), namespace: sum.Namespace, name: sum.StackID, eventtype: corev1.EventTypeNormal, reason: ReasonCommitted}
	switch {
	case sum.Error != "":
		ev.eventtype, ev.reason = corev1.EventTypeWarning, ReasonCommitFailed
		ev.message = fmt.Sprintf("Magnum %s event %s not committed (%s): %s", sum.Operation, sum.EventID, sum.Outcome, sum.Error)
	case sum.PullRequestURL != "":
		ev.message = fmt.Sprintf("Magnum %s event %s committed to branch %s for review: %s", sum.Operation, sum.EventID, sum.Branch, sum.PullRequestURL)
	default:
		ev.message = fmt.Sprintf("Magnum %s event %s committed: %s", sum.Operation, sum.EventID, sum.Revision)
	}
	s.events.add(ev)
}

// eventOfDelete is the Event of a delete's last phase.
func (s *Service) eventOfDelete(d reconciler.DeleteProgress) {
	if s.events == nil || d.Err != nil || d.To != generator.DeleteDone {
		return
	}
	rec, ok := s.clusters.Gone(d.ClusterUUID)
	if !ok {
		return
	}
	s.events.add(kubeEvent{m: s.at(rec.Root), namespace: d.Namespace, name: d.StackID, eventtype: corev1.EventTypeNormal, reason: ReasonDeleteFinished,
		message: fmt.Sprintf("delete of Magnum cluster %s finished: %d Secrets deleted, its directory removed from Git in %s", d.ClusterUUID, len(d.Secrets), d.Commit)})
}

// helmReleaseRef is the reference of a cluster's HelmRelease, with its UID when the API
// server has it (a created cluster's arrives only once Flux applied it; an Event without
// the UID still lists under `kubectl events --for helmrelease/NAME`).
func helmReleaseRef(ctx context.Context, kube client.Client, namespace, name string) *corev1.ObjectReference {
	ref := &corev1.ObjectReference{APIVersion: "helm.toolkit.fluxcd.io/v2", Kind: "HelmRelease", Namespace: namespace, Name: name}
	if kube == nil {
		return ref
	}
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(ref.APIVersion)
	u.SetKind(ref.Kind)
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := kube.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, u); err == nil {
		ref.UID, ref.ResourceVersion = u.GetUID(), u.GetResourceVersion()
	}
	return ref
}
