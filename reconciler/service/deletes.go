package service

import (
	"context"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/reconciler"
)

// removal is a deleted cluster whose directory left Git, waiting for Flux to apply that.
type removal struct {
	rec     reconciler.ClusterRecord
	secrets []string
	commit  string
}

// deletes runs the second phase of every delete whose CAPI Cluster is gone: the cluster's
// directory leaves Git, and once Flux has applied that, its Secrets leave the management
// cluster. Never earlier: while the Cluster exists, CAPO and the janitor need them.
func (s *Service) deletes(ctx context.Context) {
	for _, rec := range s.clusters.All() {
		if rec.Event.Operation != v1alpha1.DeleteCluster || s.pending(rec.Event.Cluster.UUID) {
			continue
		}
		if rep := s.judge.evaluate(ctx, rec); !rep.SecretsRemovable {
			continue
		}
		secrets, commit, err := s.o.Sink.RemoveCluster(ctx, s.o.Pipeline.Config, rec)
		if err != nil {
			s.o.Log.Error("removing a deleted cluster's Secrets from git", "cluster", rec.Event.Cluster.UUID, "stack_id", rec.StackID, "error", err)
			continue
		}
		s.o.Log.Info("deleted cluster's directory removed from git", "cluster", rec.Event.Cluster.UUID, "stack_id", rec.StackID, "commit", commit)
		if commit != "" {
			s.requester.request(rec.Namespace, nil)
		}
		s.mu.Lock()
		s.removed[rec.Event.Cluster.UUID] = removal{rec: rec, secrets: secrets, commit: commit}
		s.mu.Unlock()
	}
	// The API calls below run without the lock: it guards the map, not the deletes.
	s.mu.Lock()
	waiting := maps.Clone(s.removed)
	s.mu.Unlock()
	for uuid, rm := range waiting {
		if _, done, _ := s.judge.applied(rm.rec.Namespace, rm.commit); rm.commit != "" && !done {
			continue // Flux would put them back
		}
		if err := s.deleteSecrets(ctx, rm); err != nil {
			s.o.Log.Error("deleting a deleted cluster's Secrets", "cluster", uuid, "stack_id", rm.rec.StackID, "error", err)
			continue
		}
		if s.o.OnSecretsRemoved != nil {
			if err := s.o.OnSecretsRemoved(ctx, rm.rec); err != nil {
				s.o.Log.Error("after a deleted cluster's Secrets", "cluster", uuid, "error", err)
				continue
			}
		}
		s.mu.Lock()
		delete(s.removed, uuid)
		s.mu.Unlock()
		s.clusters.Forget(uuid, time.Now())
		s.m.deletes.Inc()
		s.o.Log.Info("delete complete: Secrets removed", "cluster", uuid, "stack_id", rm.rec.StackID, "secrets", len(rm.secrets))
	}
}

func (s *Service) pending(uuid string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.removed[uuid]
	return ok
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
