package reconciler

import (
	"context"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/gitrepo"
)

// reviewStep is a commit serve makes of its own in review mode (a resync, a delete's or an
// upgrade chain's next step): it goes to a review branch of its own, named by the branch
// template with the cluster's last event id and the step (suffix) as the event id, so a
// step planned again before its pull request is merged finds the branch holding it
// already (nothing to push) and the pull request open.
type reviewStep struct {
	ev      *v1alpha1.ClusterEvent
	stackID string
	suffix  string
	plan    planFunc
	// out and err, when set, receive what became of a resync's commit.
	out *(*Written)
	err *error
}

// commitReviewStep commits one reviewStep to its branch and opens its pull request.
func (r *Reconciler) commitReviewStep(ctx context.Context, st reviewStep) (committed, error) {
	ev := *st.ev
	ev.ID = ev.ID + "-" + st.suffix
	branch, err := r.Sink.reviewBranch(&ev, st.stackID)
	if err != nil {
		return committed{}, err
	}
	res, err := r.Sink.commitPlans(ctx, branch, []planFunc{onBranch(st.plan, branch)})
	if err != nil {
		return committed{}, stepError("push", err)
	}
	return res[0], nil
}

// onBranch makes plan's change go to a review branch.
func onBranch(plan planFunc, branch string) planFunc {
	return func(tree gitrepo.Tree) (gitrepo.Change, error) {
		c, err := plan(tree)
		c.Branch, c.Review = branch, true
		return c, err
	}
}
