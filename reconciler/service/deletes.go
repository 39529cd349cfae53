package service

import (
	"context"

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
	s.eventOfDelete(d)
}
