package service

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/generator"
)

// leftOvers deletes what the GitOps tool leaves of a cluster once it has applied the
// cluster's commit (status.Report.LeftOver): in Argo mode, the MachineDeployment of a
// deleted node group, which Argo CD never prunes, so that the node group's delete
// finishes as it does with Flux. Leader only (requeue); what it deletes is read again from
// the management cluster each time, so a failed delete is tried again on the next tick.
func (s *Service) leftOvers(ctx context.Context) {
	if s.o.Pipeline.Config.Format != generator.FormatArgo {
		return
	}
	for _, rec := range s.clusters.All() {
		if rec.Event.Operation == v1alpha1.DeleteCluster {
			continue
		}
		m := s.at(rec.Root)
		if m == nil || m.judge == nil {
			continue
		}
		for _, ref := range m.judge.leftOver(ctx, rec) {
			log := s.o.Log.With("cluster", rec.Event.Cluster.UUID, "stack_id", rec.StackID,
				"kind", ref.GVK.Kind, "namespace", ref.Namespace, "name", ref.Name)
			if m.Kube == nil {
				log.Warn("no management cluster client: Argo CD leaves this object and serve cannot delete it")
				continue
			}
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(ref.GVK)
			u.SetNamespace(ref.Namespace)
			u.SetName(ref.Name)
			err := m.Kube.Delete(ctx, u, client.PropagationPolicy(metav1.DeletePropagationBackground))
			switch {
			case apierrors.IsNotFound(err):
			case err != nil:
				log.Error("deleting what Argo CD leaves of a deleted node group", "error", err)
			default:
				log.Info("deleted what Argo CD leaves of a deleted node group")
			}
		}
	}
}
