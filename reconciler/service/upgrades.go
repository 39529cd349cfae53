package service

import (
	"context"

	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/reconciler"
	"github.com/magnum-gitops/magnum-gitops/status"
)

// requeue is the leader's level trigger: every deleted cluster, and every cluster in the
// middle of a chained upgrade, is reconciled again, so that its delete or upgrade step
// takes it further when the management cluster allows it; and in Argo mode, what Argo CD
// leaves of a deleted node group goes (leftovers.go).
func (s *Service) requeue(ctx context.Context) {
	s.deletes(ctx)
	s.upgrades(ctx)
	s.leftOvers(ctx)
}

// upgrades requeues the clusters whose HelmRelease (in Argo mode, Application) deploys a
// step of a chained upgrade (reconciler/upgrade.go), as the management cluster shows them.
// Applications are listed in Argo mode alone, as the status snapshot lists them
// (status.KindsOf).
func (s *Service) upgrades(ctx context.Context) {
	argo := s.o.Pipeline.Config.Format == generator.FormatArgo
	for _, m := range s.managed {
		if m.Status == nil {
			continue
		}
		uuids, err := status.UpgradeChains(ctx, m.Status, argo)
		if err != nil {
			s.o.Log.Warn("upgrade chains: reading the management cluster", "management_cluster", m.Name, "error", err)
			continue
		}
		s.reconciler.Requeue(uuids...)
	}
}

// observeUpgrade logs what a reconcile's upgrade step did.
func (s *Service) observeUpgrade(u reconciler.UpgradeProgress) {
	log := s.o.Log.With("cluster", u.ClusterUUID, "stack_id", u.StackID)
	if u.Err != nil {
		log.Error("upgrade chain: next step", "from", u.From, "error", u.Err)
		return
	}
	log.Info("upgrade chain: next step committed", "from", u.From, "to", u.To, "target", u.Target, "commit", u.Commit)
}
