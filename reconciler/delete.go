package reconciler

import (
	"context"
	"fmt"
	"strings"

	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/gitrepo"
	"github.com/magnum-gitops/magnum-gitops/magnum"
)

// A deleted cluster leaves Git in the phases of generator.DeletePhase, one reconcile step
// at a time: after its delete_cluster commit, each reconcile of the cluster (the leader
// requeues every deleted cluster, see Reconciler.Requeue) runs deleteStep, which reads the
// phase its directory stands at on the branch head and, when the management cluster
// allows it, plans the commit to the next phase into the group's push:
//
//	DeleteNotStarted       nothing: the delete_cluster commit is not on the branch yet.
//	DeleteAwaitingCluster  once the CAPI Cluster is gone (CAPO and the janitor need the
//	                       Secrets until then): the Secret files leave Git
//	                       (removeSecrets), the directory stays.
//	DeleteSecretsRemoved   once Flux has applied that commit (before, it would put the
//	                       Secrets back) and the Cluster is still gone: the Secrets are
//	                       deleted from the management cluster, then the rest of the
//	                       directory leaves Git (finishDelete) and the cluster is forgotten.
//	DeleteDone             forgotten, once the Cluster is gone: finished by another
//	                       replica, or a cluster that never had Secrets in Git.
//
// Every commit is planned on the head it is pushed on, and only from its own phase: an
// operator who reverted the delete_cluster commit meanwhile brought the HelmRelease back,
// and the cluster it recreates needs its Secrets. So replicas that run the step at once
// commit each phase once, and a restarted or newly elected leader carries on from Git.

// Management is what the delete and upgrade steps ask of the management cluster; the
// service answers from its status snapshot and the Kubernetes API.
type Management interface {
	// RolledOut reports whether Cluster API runs rec's cluster at Kubernetes version
	// (X.Y.Z) everywhere: the control plane and every MachineDeployment up to date and
	// ready, nothing rolling out (status.RolledOut).
	RolledOut(ctx context.Context, rec ClusterRecord, version string) bool
	// ClusterGone reports whether the CAPI Cluster of rec is gone
	// (status.Report.SecretsRemovable).
	ClusterGone(ctx context.Context, rec ClusterRecord) bool
	// Applied reports whether Flux has applied commit, or a later commit that holds it, to
	// the clusters of rec's namespace on its management cluster.
	Applied(rec ClusterRecord, commit string) bool
	// DeleteSecrets deletes the named Secrets of rec's namespace (absent ones are fine),
	// and what else the cluster held outside Git (its application credentials).
	DeleteSecrets(ctx context.Context, rec ClusterRecord, names []string) error
}

// DeleteProgress is what one delete step did, for logs and metrics: the directory went
// From one phase To the next in Commit, or the step failed on its way there (Err). A step
// that had to wait, or found the phase reached by another replica, reports nothing.
type DeleteProgress struct {
	ClusterUUID, StackID, Namespace string
	From, To                        generator.DeletePhase
	Commit                          string
	// Secrets are the Secrets that left Git (From DeleteAwaitingCluster) or the
	// management cluster (From DeleteSecretsRemoved).
	Secrets []string
	Err     error
}

// removal is a deleted cluster whose Secret files left Git, waiting for Flux to apply
// that before its Secrets are deleted from the management cluster.
type removal struct {
	secrets []string
	// commit is the one Flux must have applied first: the removal's, or a later one
	// (secretsRemoval).
	commit string
}

// deletion is the delete step of one reconcile: the commit it planned (nil when it has
// nothing to commit now) and what becomes of the cluster once that is pushed.
type deletion struct {
	rec      ClusterRecord
	progress DeleteProgress
	plan     planFunc
	secrets  []string // the Secret files removeSecrets removed, set by its plan
}

// deleteStep takes a deleted cluster toward DeleteDone as far as the management cluster
// allows now. It returns nil when there is nothing to do or report.
func (r *Reconciler) deleteStep(ctx context.Context, rec ClusterRecord) *deletion {
	cfg := &r.Pipeline.Config.Config
	d := &deletion{rec: rec, progress: DeleteProgress{ClusterUUID: rec.Event.Cluster.UUID, StackID: rec.StackID, Namespace: rec.Namespace}}
	names, err := r.Sink.Repo.ListDir(generator.ClusterDir(rec.Root, rec.Namespace, rec.StackID))
	if err != nil {
		d.progress.Err = stepError("read", err)
		return d
	}
	d.progress.From = generator.DeletePhaseOf(names, cfg.DeployFile())
	d.progress.To = d.progress.From + 1
	switch d.progress.From {
	case generator.DeleteNotStarted:
		return nil
	case generator.DeleteDone:
		// Asked first, so that a delete whose commit is still on its way is not forgotten.
		if !r.Management.ClusterGone(ctx, rec) {
			return nil
		}
		r.forget(rec)
		return nil
	case generator.DeleteAwaitingCluster:
		if !r.Management.ClusterGone(ctx, rec) {
			return nil
		}
		d.plan = d.removeSecrets(cfg)
		return d
	}
	rm, err := r.removal(ctx, rec)
	if err != nil {
		d.progress.Err = stepError("read", err)
		return d
	}
	// The Cluster is asked after Flux: one may have come since the Secret files left Git
	// (Flux applying a create late), and it needs them until it is gone.
	if rm.commit != "" && !r.Management.Applied(rec, rm.commit) || !r.Management.ClusterGone(ctx, rec) {
		return nil
	}
	d.progress.Secrets = rm.secrets
	if err := r.Management.DeleteSecrets(ctx, rec, rm.secrets); err != nil {
		d.progress.Err = &failure{Kind: KindRetry, Step: "delete secrets", Err: err}
		return d
	}
	d.plan = finishDelete(cfg, rec)
	return d
}

// deleted takes what became of a delete step's commit, once the group pushed.
func (r *Reconciler) deleted(d *deletion, c committed, err error) {
	switch {
	case err != nil:
		d.progress.Err = err
		return
	case c.Err != nil:
		d.progress.Err = stepError("commit", c.Err)
		return
	}
	if !c.NoOp {
		d.progress.Commit = c.Commit.String()
	}
	uuid := d.rec.Event.Cluster.UUID
	switch d.progress.From {
	case generator.DeleteAwaitingCluster:
		// No commit: another replica's did it (the history says which), or an operator's
		// revert brought the cluster back.
		if d.progress.Commit != "" {
			d.progress.Secrets = d.secrets
			r.removals.Store(uuid, removal{secrets: d.secrets, commit: d.progress.Commit})
		}
	case generator.DeleteSecretsRemoved:
		r.forget(d.rec)
	}
}

// removal is the removal of a cluster's Secret files: the one this process committed, or
// else the one the history records.
func (r *Reconciler) removal(ctx context.Context, rec ClusterRecord) (removal, error) {
	uuid := rec.Event.Cluster.UUID
	if rm, ok := r.removals.Load(uuid); ok {
		return rm.(removal), nil
	}
	commit, secrets, err := secretsRemoval(ctx, r.Sink.Repo, rec)
	if err != nil {
		return removal{}, err
	}
	rm := removal{secrets: secrets, commit: commit}
	r.removals.Store(uuid, rm)
	return rm, nil
}

// forget drops a cluster whose delete is complete: its directory is gone at the head the
// repository holds now.
func (r *Reconciler) forget(rec ClusterRecord) {
	uuid := rec.Event.Cluster.UUID
	r.removals.Delete(uuid)
	var in string
	if head, err := r.Sink.Repo.Head(); err == nil {
		in = head.String()
	}
	r.Clusters.Forget(uuid, r.Now(), in)
}

// removeSecrets plans DeleteAwaitingCluster → DeleteSecretsRemoved: the Secret files
// leave the cluster's directory (generator.SecretsRemoved), and the directory stays,
// saying in Git that the delete is unfinished. It records in d the names of the Secrets
// the directory held: Flux does not prune them (they carry the prune guard).
func (d *deletion) removeSecrets(cfg *generator.Config) planFunc {
	rec := d.rec
	dir := generator.ClusterDir(rec.Root, rec.Namespace, rec.StackID)
	return func(base gitrepo.Tree) (gitrepo.Change, error) {
		names, err := atPhase(base, cfg, dir, generator.DeleteAwaitingCluster)
		if err != nil {
			return gitrepo.Change{}, err
		}
		fs, removed, err := generator.SecretsRemoved(rec.Root, rec.Namespace, rec.StackID, names)
		if err != nil {
			return gitrepo.Change{}, stepError("encode", err)
		}
		d.secrets = d.secrets[:0]
		for _, f := range removed {
			suffix, _ := generator.SecretSuffix(f)
			d.secrets = append(d.secrets, magnum.ResourceName(rec.StackID, suffix))
		}
		change := gitrepo.Change{Files: fs.Files,
			Subject: fmt.Sprintf("magnum: remove the Secrets of deleted cluster %s (%s) in project %s", rec.Event.Cluster.Name, rec.StackID, rec.Event.Cluster.ProjectID),
			Body: "The CAPI Cluster is gone, so its credentials and CA Secrets leave the repository.\n" +
				"They carry kustomize.toolkit.fluxcd.io/prune: disabled, so Flux only drops them from its\n" +
				"inventory: magnum-gitops deletes them from the management cluster once Flux has applied\n" +
				"this commit, then removes what is left of the directory.",
			Trailers: deleteTrailers(rec, operationRemoveSecrets, gitrepo.Trailer{Key: trailerSecrets, Value: strings.Join(d.secrets, ", ")})}
		for _, f := range fs.Deletes {
			change.Files[f] = nil
		}
		return change, nil
	}
}

// finishDelete plans DeleteSecretsRemoved → DeleteDone: what is left of the cluster's
// directory (an empty kustomization.yaml and the record) leaves Git.
func finishDelete(cfg *generator.Config, rec ClusterRecord) planFunc {
	dir := generator.ClusterDir(rec.Root, rec.Namespace, rec.StackID)
	return func(base gitrepo.Tree) (gitrepo.Change, error) {
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
			Trailers: deleteTrailers(rec, operationDeleteComplete)}
		for _, f := range files {
			change.Files[f] = nil
		}
		return change, nil
	}
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
		{Key: trailerClusterUUID, Value: rec.Event.Cluster.UUID},
		{Key: trailerOperation, Value: op},
		{Key: trailerProject, Value: rec.Event.Cluster.ProjectID},
		{Key: trailerStackID, Value: rec.StackID},
	}, more...)
}

// secretsRemoval finds the commit of RemoveSecrets for a cluster in the newest
// ledgerHistory commits the clone holds, with the Secret names it recorded: a service that
// did not make it (restarted, or newly elected) needs both to finish the delete, since
// Flux must have applied the commit before the Secrets go. When the history read does not
// reach it, commit is the oldest commit read, which came after it (Flux applying that one
// applied the removal too), and secrets are every name the generator may have written.
func secretsRemoval(ctx context.Context, repo *gitrepo.Repo, rec ClusterRecord) (commit string, secrets []string, err error) {
	n := 0
	var oldest string
	err = repo.Walk(ctx, func(c gitrepo.CommitInfo) error {
		if n++; n > ledgerHistory {
			return gitrepo.ErrStopWalk
		}
		oldest = c.Hash.String()
		if op, _ := c.Trailer(trailerOperation); op != operationRemoveSecrets {
			return nil
		}
		if id, _ := c.Trailer(trailerClusterUUID); id != rec.Event.Cluster.UUID {
			return nil
		}
		commit = c.Hash.String()
		if list, _ := c.Trailer(trailerSecrets); list != "" {
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
	operationRemoveSecrets  = "delete_cluster_secrets"
	operationDeleteComplete = "delete_cluster_complete"
)

// trailerSecrets lists, on the commit that removed a deleted cluster's Secret files, the
// names of those Secrets.
const trailerSecrets = "Magnum-Secrets"
