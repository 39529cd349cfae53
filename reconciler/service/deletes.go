package service

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/reconciler"
)

// deletes requeues every deleted cluster, so that its reconcile takes it one phase of its
// delete further when the management cluster allows it (reconciler/delete.go). Only the
// leader requeues (requeue): the phases are read back from Git, so a restarted or newly
// elected leader carries on where the last one stopped.
func (s *Service) deletes(context.Context) {
	var uuids []string
	for _, rec := range s.clusters.All() {
		if rec.Event.Operation == v1alpha1.DeleteCluster {
			uuids = append(uuids, rec.Event.Cluster.UUID)
		}
	}
	s.reconciler.Requeue(uuids...)
}

// observeDelete logs and counts what a reconcile's delete step did.
func (s *Service) observeDelete(d reconciler.DeleteProgress) {
	log := s.o.Log.With("cluster", d.ClusterUUID, "stack_id", d.StackID, "phase", d.From.String())
	switch {
	case d.Err != nil:
		log.Error("deleting a deleted cluster's Secrets", "error", d.Err)
	case d.To == generator.DeleteSecretsRemoved:
		log.Info("deleted cluster's Secrets removed from git", "commit", d.Commit)
	case d.To == generator.DeleteDone:
		s.m.deletes.Inc()
		log.Info("delete complete: Secrets deleted, directory removed from git", "secrets", len(d.Secrets), "commit", d.Commit)
	}
}

// management answers the delete and upgrade steps from the judge's snapshot and the
// Kubernetes API.
type management struct{ s *Service }

func (m management) ClusterGone(ctx context.Context, rec reconciler.ClusterRecord) bool {
	return m.s.judge.evaluate(ctx, rec).SecretsRemovable
}

func (m management) Applied(namespace, commit string) bool {
	_, includes, _ := m.s.judge.applied(namespace, commit)
	return includes
}

// DeleteSecrets deletes a removed cluster's Secrets by name (absent ones are fine), then
// what OnSecretsRemoved deletes.
func (m management) DeleteSecrets(ctx context.Context, rec reconciler.ClusterRecord, names []string) error {
	o := m.s.o
	if o.Kube == nil && len(names) > 0 {
		o.Log.Warn("no management cluster client: the deleted cluster's Secrets stay", "stack_id", rec.StackID, "secrets", names)
	}
	for _, name := range names {
		if o.Kube == nil {
			break
		}
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: rec.Namespace}}
		if err := o.Kube.Delete(ctx, sec); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("secret %s/%s: %w", rec.Namespace, name, err)
		}
	}
	if o.OnSecretsRemoved != nil {
		if err := o.OnSecretsRemoved(ctx, rec); err != nil {
			return fmt.Errorf("after its Secrets: %w", err)
		}
	}
	return nil
}
