package reconciler

import (
	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/gitrepo"
)

// onReviewBranch sends a commit serve makes of its own in review mode (a resync, a
// delete's or an upgrade chain's next step) to a review branch of its own, named by the
// branch template with the cluster's last event id and the step (suffix) as the event id,
// so a step planned again before its pull request is merged finds the branch holding it
// already (nothing to push) and the pull request open.
func (r *Reconciler) onReviewBranch(c *change, last *v1alpha1.ClusterEvent, stackID, suffix string) error {
	ev := *last
	ev.ID = ev.ID + "-" + suffix
	branch, err := r.Sink.reviewBranch(&ev, stackID)
	if err != nil {
		return err
	}
	c.branch, c.plan = branch, onBranch(c.plan, branch)
	return nil
}

// onBranch makes plan's change go to a review branch.
func onBranch(plan planFunc, branch string) planFunc {
	return func(tree gitrepo.Tree) (gitrepo.Change, error) {
		c, err := plan(tree)
		c.Branch, c.Review = branch, true
		return c, err
	}
}
