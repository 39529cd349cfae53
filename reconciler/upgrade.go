package reconciler

import (
	"context"
	"errors"
	"fmt"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/gitrepo"
)

// A chained upgrade takes a cluster more than one Kubernetes minor version forward, one
// minor a commit (generator.RenderUpgradeStep):
//
//   - The event's own commit holds its record, which asks for the target version, and a
//     HelmRelease (in Argo mode, an Application) that deploys the first step, annotated
//     with the target (magnum.AnnotationUpgradeTarget).
//   - While the HelmRelease or Application carries that annotation, the chain is under way. The leader
//     requeues such clusters, and each reconcile runs the upgrade step: once the
//     management cluster reports the deployed version rolled out (the control plane, then
//     every MachineDeployment, all up to date and ready), it commits the next step, until
//     the last one, which deploys the target without the annotation.
//   - Nothing else moves Kubernetes meanwhile: an event or a resync that would is refused
//     with errUpgradeInProgress.
//   - A step that fails never rolls out, so the chain stops there; the status says why.
//
// Every state lives in Git, so a restarted or newly elected leader carries on.

// errUpgradeInProgress refuses to move Kubernetes while an upgrade chain is under way.
var errUpgradeInProgress = errors.New("an upgrade chain is under way")

// trailerUpgradeTarget marks the commits of a chained upgrade with its target version.
const trailerUpgradeTarget = "Magnum-Upgrade-Target"

// operationUpgradeStep is the Magnum-Operation trailer of a chain's later steps.
const operationUpgradeStep = "upgrade_cluster_step"

// chainStep is a step the plan deploys instead of the event's own render.
type chainStep struct {
	*generator.UpgradeStep
	res *generator.Result
}

// chain decides how a plan that changes the deployed HelmRelease moves Kubernetes: nil when
// it does not move it, or within one minor; the step to deploy for a chain; an error when
// a chain is under way and the caller is not the upgrade step (chained), or when the
// chain cannot step (no image for the next minor).
func (p *Pipeline) chain(ev *v1alpha1.ClusterEvent, res *generator.Result, dep *deployed, chained bool) (*chainStep, error) {
	if dep == nil || res.Values == nil {
		return nil, nil
	}
	from, to := generator.KubernetesVersion(dep.values), generator.KubernetesVersion(res.Values)
	if from == "" || to == "" || from == to {
		return nil, nil
	}
	if !chained && dep.upgradeTarget != "" {
		return nil, &failure{Kind: KindRetry, Step: "diff", Err: fmt.Errorf("%w: the cluster deploys Kubernetes %s on its way to %s; the next step follows once Cluster API has rolled out %s",
			errUpgradeInProgress, from, dep.upgradeTarget, from)}
	}
	stepRes, step, err := generator.RenderUpgradeStep(ev, p.Config, res, dep.upgradeState())
	if err != nil {
		return nil, stepError("render", err)
	}
	if step == nil {
		return nil, nil
	}
	return &chainStep{UpgradeStep: step, res: stepRes}, nil
}

// UpgradeProgress is what one upgrade step did, for logs and metrics: the cluster went
// From one Kubernetes version To the next toward Target in Commit, or the step failed
// (Err). A step that had to wait reports nothing.
type UpgradeProgress struct {
	ClusterUUID, StackID, Namespace string
	From, To, Target                string
	Commit                          string
	Err                             error
}

// upgrading is the upgrade step of one reconcile.
type upgrading struct {
	rec      ClusterRecord
	progress UpgradeProgress
	plan     planFunc
	out      Written
}

// upgradeStep moves an upgrade chain under way one step on when the management cluster has
// rolled out the version the head deploys; nil when there is nothing to do or report.
func (r *Reconciler) upgradeStep(ctx context.Context, rec ClusterRecord) *upgrading {
	dir := generator.ClusterDir(rec.Root, rec.Namespace, rec.StackID)
	u := &upgrading{rec: rec, progress: UpgradeProgress{ClusterUUID: rec.Event.Cluster.UUID, StackID: rec.StackID, Namespace: rec.Namespace}}
	dep, err := readDeployed(r.Sink.Repo, dir, r.Pipeline.Gate)
	if err != nil {
		u.progress.Err = stepError("read", err)
		return u
	}
	if dep == nil {
		return nil
	}
	from := generator.KubernetesVersion(dep.values)
	if dep.upgradeTarget == "" || !r.Management.RolledOut(ctx, rec, from) {
		return nil
	}
	ev := rec.Event
	res, err := r.render(ctx, ev, &u.out)
	if err != nil {
		u.progress.Err = err
		return u
	}
	u.progress.From = from
	u.plan = func(base gitrepo.Tree) (gitrepo.Change, error) {
		// Only from the version found rolled out: another replica may have moved on.
		now, err := readDeployed(base, dir, r.Pipeline.Gate)
		if err != nil {
			return gitrepo.Change{}, stepError("read", err)
		}
		if now == nil || now.upgradeTarget == "" || generator.KubernetesVersion(now.values) != from {
			return gitrepo.Change{}, errNothingToDo
		}
		pl, err := r.Pipeline.plan(ev, res, base, true)
		if err != nil {
			return gitrepo.Change{}, err
		}
		if pl.NoOp() {
			return gitrepo.Change{}, errNothingToDo
		}
		u.progress.To, u.progress.Target = generator.KubernetesVersion(pl.Result.Values), now.upgradeTarget
		u.out.Plan = pl
		asUpgradeStep(pl, from, now.upgradeTarget)
		return pl.Commit, nil
	}
	return u
}

// upgraded takes what became of an upgrade step's commit, once the group pushed.
func (r *Reconciler) upgraded(u *upgrading, c committed, err error) {
	switch {
	case err != nil:
		u.progress.Err = err
	case c.Err != nil:
		u.progress.Err = stepError("commit", c.Err)
	case !c.NoOp:
		u.progress.Commit = c.Commit.String()
		// The status now waits for this commit, and the step's deadline runs from now.
		r.Clusters.stepped(u.progress.ClusterUUID, u.progress.Commit, r.Now())
	}
}

// asUpgradeStep rewrites the message of a chain's later step: no Magnum event asked for
// this commit (the event's id and digest stay with the commit that answered it).
func asUpgradeStep(pl *Plan, from, target string) {
	r := pl.Result
	to := generator.KubernetesVersion(r.Values)
	pl.Commit.Subject = fmt.Sprintf("magnum-gitops: upgrade cluster %s (%s) in project %s to Kubernetes %s", r.ClusterName, r.ReleaseName, r.ProjectID, to)
	pl.Commit.Body = fmt.Sprintf("The next step of a chained upgrade: Cluster API has rolled out Kubernetes %s.\n\n", from) + pl.Commit.Body
	kept := withoutEvent(pl.Commit.Trailers)
	for i, t := range kept {
		if t.Key == trailerOperation {
			kept[i].Value = operationUpgradeStep
		}
	}
	if pl.Step == nil {
		// The last step: the one before it carried the target.
		kept = append(kept, gitrepo.Trailer{Key: trailerUpgradeTarget, Value: target})
	}
	pl.Commit.Trailers = kept
}
