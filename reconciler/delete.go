package reconciler

import (
	"context"
	"fmt"
	"strings"

	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/gitrepo"
	"github.com/magnum-gitops/magnum-gitops/magnum"
)

// The commits that take a deleted cluster through the phases of generator.DeletePhase
// after its delete_cluster event: RemoveSecrets (AwaitingCluster → SecretsRemoved) and
// FinishDelete (SecretsRemoved → Done). reconciler/service/deletes.go decides when.

// RemoveSecrets commits the first step of a delete's second phase, once the CAPI Cluster
// is gone: the Secret files leave the cluster's directory (generator.SecretsRemoved), and
// the directory stays, saying in Git that the delete is unfinished. It returns the names
// of the Secrets the directory held (Flux does not prune them: they carry the prune
// guard) and the commit; none and "" when the Secret files had left already.
//
// The change is planned on the head it is committed on, and only while the directory
// still awaits the Cluster: an operator who reverted the delete_cluster commit meanwhile
// brought the HelmRelease back, and the cluster it recreates needs its Secrets.
func (s *GitSink) RemoveSecrets(ctx context.Context, cfg *generator.Config, rec ClusterRecord) (secrets []string, commit string, err error) {
	dir := generator.ClusterDir(cfg, rec.Namespace, rec.StackID)
	gr, err := s.commitPlan(ctx, "", func(base gitrepo.Tree) (gitrepo.Change, error) {
		names, err := atPhase(base, cfg, dir, generator.DeleteAwaitingCluster)
		if err != nil {
			return gitrepo.Change{}, err
		}
		fs, removed, err := generator.SecretsRemoved(cfg, rec.Namespace, rec.StackID, names)
		if err != nil {
			return gitrepo.Change{}, stepError("encode", err)
		}
		secrets = secrets[:0]
		for _, f := range removed {
			suffix, _ := generator.SecretSuffix(f)
			secrets = append(secrets, magnum.ResourceName(rec.StackID, suffix))
		}
		change := gitrepo.Change{Files: fs.Files,
			Subject: fmt.Sprintf("magnum: remove the Secrets of deleted cluster %s (%s) in project %s", rec.Event.Cluster.Name, rec.StackID, rec.Event.Cluster.ProjectID),
			Body: "The CAPI Cluster is gone, so its credentials and CA Secrets leave the repository.\n" +
				"They carry kustomize.toolkit.fluxcd.io/prune: disabled, so Flux only drops them from its\n" +
				"inventory: magnum-gitops deletes them from the management cluster once Flux has applied\n" +
				"this commit, then removes what is left of the directory.",
			Trailers: deleteTrailers(rec, OperationRemoveSecrets, gitrepo.Trailer{Key: TrailerSecrets, Value: strings.Join(secrets, ", ")})}
		for _, f := range fs.Deletes {
			change.Files[f] = nil
		}
		return change, nil
	})
	if err != nil {
		return nil, "", stepError("push", err)
	}
	if gr.NoOp {
		return nil, "", nil
	}
	return secrets, gr.Commit.String(), nil
}

// FinishDelete commits the end of a delete: what is left of the cluster's directory (an
// empty kustomization.yaml and the record) leaves Git, once the Secrets are gone from the
// management cluster. The commit is "" when the directory had left already, or when it
// no longer stands at DeleteSecretsRemoved on the head (an operator's revert brought the
// cluster back): then nothing is removed.
func (s *GitSink) FinishDelete(ctx context.Context, cfg *generator.Config, rec ClusterRecord) (commit string, err error) {
	dir := generator.ClusterDir(cfg, rec.Namespace, rec.StackID)
	gr, err := s.commitPlan(ctx, "", func(base gitrepo.Tree) (gitrepo.Change, error) {
		if _, err := atPhase(base, cfg, dir, generator.DeleteSecretsRemoved); err != nil {
			return gitrepo.Change{}, err
		}
		files, err := base.ListFiles(dir)
		if err != nil {
			return gitrepo.Change{}, stepError("read", err)
		}
		change := gitrepo.Change{Files: map[string][]byte{},
			Subject:  fmt.Sprintf("magnum: deleted cluster %s (%s) in project %s is gone", rec.Event.Cluster.Name, rec.StackID, rec.Event.Cluster.ProjectID),
			Body:     "Its Secrets were deleted from the management cluster; the rest of its directory goes.",
			Trailers: deleteTrailers(rec, OperationDeleteComplete)}
		for _, f := range files {
			change.Files[f] = nil
		}
		return change, nil
	})
	if err != nil {
		return "", stepError("push", err)
	}
	if gr.NoOp {
		return "", nil
	}
	return gr.Commit.String(), nil
}

// atPhase returns the base names of dir's files on base when the directory stands at
// phase there, else errNothingToDo: a delete step commits only from its own phase.
func atPhase(base gitrepo.Tree, cfg *generator.Config, dir string, phase generator.DeletePhase) ([]string, error) {
	names, err := base.ListDir(dir)
	if err != nil {
		return nil, stepError("read", err)
	}
	if generator.DeletePhaseOf(names, cfg.DeployFile()) != phase {
		return nil, errNothingToDo
	}
	return names, nil
}

func deleteTrailers(rec ClusterRecord, op string, more ...gitrepo.Trailer) []gitrepo.Trailer {
	return append([]gitrepo.Trailer{
		{Key: TrailerClusterUUID, Value: rec.Event.Cluster.UUID},
		{Key: TrailerOperation, Value: op},
		{Key: TrailerProject, Value: rec.Event.Cluster.ProjectID},
		{Key: TrailerStackID, Value: rec.StackID},
	}, more...)
}

// SecretsRemoval finds the commit of RemoveSecrets for a cluster in the newest
// LedgerHistory commits the clone holds, with the Secret names it recorded: a service that
// did not make it (restarted, or newly elected) needs both to finish the delete, since
// Flux must have applied the commit before the Secrets go. When the history read does not
// reach it, commit is the oldest commit read, which came after it (Flux applying that one
// applied the removal too), and secrets are every name the generator may have written.
func SecretsRemoval(ctx context.Context, repo *gitrepo.Repo, rec ClusterRecord) (commit string, secrets []string, err error) {
	n := 0
	var oldest string
	err = repo.Walk(ctx, func(c gitrepo.CommitInfo) error {
		if n++; n > LedgerHistory {
			return gitrepo.ErrStopWalk
		}
		oldest = c.Hash.String()
		if op, _ := c.Trailer(TrailerOperation); op != OperationRemoveSecrets {
			return nil
		}
		if id, _ := c.Trailer(TrailerClusterUUID); id != rec.Event.Cluster.UUID {
			return nil
		}
		commit = c.Hash.String()
		if list, _ := c.Trailer(TrailerSecrets); list != "" {
			secrets = strings.Split(list, ", ")
		}
		return gitrepo.ErrStopWalk
	})
	if err != nil {
		return "", nil, err
	}
	if commit == "" {
		commit = oldest
	}
	if secrets == nil {
		secrets = allSecretNames(rec.StackID)
	}
	return commit, secrets, nil
}

// allSecretNames is every Secret name the generator may write for a cluster.
func allSecretNames(stackID string) []string {
	out := make([]string, len(generator.SecretSuffixes))
	for i, s := range generator.SecretSuffixes {
		out[i] = magnum.ResourceName(stackID, s)
	}
	return out
}

// The Magnum-Operation trailers of the delete's second phase: the Secret files leave
// Git, then, once the Secrets are deleted from the management cluster, the directory.
const (
	OperationRemoveSecrets  = "delete_cluster_secrets"
	OperationDeleteComplete = "delete_cluster_complete"
)

// TrailerSecrets lists, on the commit that removed a deleted cluster's Secret files, the
// names of those Secrets.
const TrailerSecrets = "Magnum-Secrets"
