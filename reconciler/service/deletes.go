package service

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/reconciler"
)

// removal is a deleted cluster whose Secret files left Git, waiting for Flux to apply that
// before its Secrets are deleted from the management cluster.
type removal struct {
	rec     reconciler.ClusterRecord
	secrets []string
	commit  string // Flux applies it before the Secrets go: the removal's, or a later commit (SecretsRemoval)
}

// deletes takes every deleted cluster through the phases of generator.DeletePhase, as far
// as it can now. The Secrets leave only once the CAPI Cluster is gone: until then CAPO and
// the janitor need them. Each phase is read back from Git, so a restarted or newly elected
// leader carries on where the last one stopped.
func (s *Service) deletes(ctx context.Context) {
	for _, rec := range s.clusters.All() {
		if rec.Event.Operation != v1alpha1.DeleteCluster {
			continue
		}
		if err := s.finishDelete(ctx, rec); err != nil {
			s.o.Log.Error("deleting a deleted cluster's Secrets", "cluster", rec.Event.Cluster.UUID, "stack_id", rec.StackID, "error", err)
		}
	}
}

// finishDelete takes a deleted cluster one phase further, as far as it can now.
func (s *Service) finishDelete(ctx context.Context, rec reconciler.ClusterRecord) error {
	uuid := rec.Event.Cluster.UUID
	names, err := s.o.Sink.Repo.ListDir(generator.ClusterDir(s.o.Pipeline.Config, rec.Namespace, rec.StackID))
	if err != nil {
		return fmt.Errorf("reading git: %w", err)
	}
	switch generator.DeletePhaseOf(names, s.o.Pipeline.Config.DeployFile()) {
	case generator.DeleteNotStarted:
		return nil // the delete_cluster commit is not on the branch yet
	case generator.DeleteDone:
		// Finished by another replica, or a cluster that never had Secrets in Git; asked
		// first, so that a delete whose commit is still on its way is not forgotten.
		if s.judge.evaluate(ctx, rec).SecretsRemovable {
			s.forget(uuid)
		}
		return nil
	case generator.DeleteAwaitingCluster:
		if !s.judge.evaluate(ctx, rec).SecretsRemovable {
			return nil // the CAPI Cluster still needs them
		}
		secrets, commit, err := s.o.Sink.RemoveSecrets(ctx, s.o.Pipeline.Config, rec)
		if err != nil {
			return fmt.Errorf("removing its Secret files from git: %w", err)
		}
		// No commit: another replica's commit did it (the history says which), or an
		// operator's revert of the delete brought the cluster back.
		if commit != "" {
			s.o.Log.Info("deleted cluster's Secrets removed from git", "cluster", uuid, "stack_id", rec.StackID, "commit", commit)
			s.requester.request(rec.Namespace, nil)
			s.mu.Lock()
			s.removed[uuid] = removal{rec: rec, secrets: secrets, commit: commit}
			s.mu.Unlock()
		}
		return nil // Flux has not applied it yet
	}
	return s.deleteRemovedSecrets(ctx, rec)
}

// deleteRemovedSecrets finishes a delete in DeleteSecretsRemoved: once Flux has applied the
// commit that took the Secret files out of Git (it would put them back before), the
// Secrets are deleted from the management cluster, then the application credential
// (OnSecretsRemoved), then the directory leaves Git.
func (s *Service) deleteRemovedSecrets(ctx context.Context, rec reconciler.ClusterRecord) error {
	uuid := rec.Event.Cluster.UUID
	s.mu.Lock()
	rm, known := s.removed[uuid]
	s.mu.Unlock()
	if !known {
		commit, secrets, err := reconciler.SecretsRemoval(ctx, s.o.Sink.Repo, rec)
		if err != nil {
			return fmt.Errorf("reading git history: %w", err)
		}
		rm = removal{rec: rec, secrets: secrets, commit: commit}
		s.mu.Lock()
		s.removed[uuid] = rm
		s.mu.Unlock()
	}
	if _, done, _ := s.judge.applied(rm.rec.Namespace, rm.commit); rm.commit != "" && !done {
		return nil // Flux would put them back
	}
	// Asked just before: a Cluster may have come since the Secret files left Git (Flux
	// applying a create late), and it needs them until it is gone.
	if !s.judge.evaluate(ctx, rec).SecretsRemovable {
		return nil
	}
	if err := s.deleteSecrets(ctx, rm); err != nil {
		return err
	}
	if s.o.OnSecretsRemoved != nil {
		if err := s.o.OnSecretsRemoved(ctx, rm.rec); err != nil {
			return fmt.Errorf("after its Secrets: %w", err)
		}
	}
	commit, err := s.o.Sink.FinishDelete(ctx, s.o.Pipeline.Config, rec)
	if err != nil {
		return fmt.Errorf("removing its directory from git: %w", err)
	}
	s.forget(uuid)
	if commit == "" {
		return nil // another leader finished it; counted there
	}
	s.m.deletes.Inc()
	s.o.Log.Info("delete complete: Secrets deleted, directory removed from git", "cluster", uuid, "stack_id", rec.StackID,
		"secrets", len(rm.secrets), "commit", commit)
	return nil
}

// forget drops a cluster whose delete is complete: its directory is gone at the head the
// repository holds now.
func (s *Service) forget(uuid string) {
	s.mu.Lock()
	delete(s.removed, uuid)
	s.mu.Unlock()
	var in string
	if head, err := s.o.Sink.Repo.Head(); err == nil {
		in = head.String()
	}
	s.clusters.Forget(uuid, time.Now(), in)
}

// deleteSecrets deletes a removed cluster's Secrets by name; absent ones are fine.
func (s *Service) deleteSecrets(ctx context.Context, rm removal) error {
	if s.o.Kube == nil {
		if len(rm.secrets) > 0 {
			s.o.Log.Warn("no management cluster client: the deleted cluster's Secrets stay", "stack_id", rm.rec.StackID, "secrets", rm.secrets)
		}
		return nil
	}
	for _, name := range rm.secrets {
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: rm.rec.Namespace}}
		if err := s.o.Kube.Delete(ctx, sec); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("secret %s/%s: %w", rm.rec.Namespace, name, err)
		}
	}
	return nil
}
