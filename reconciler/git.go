package reconciler

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"text/template"
	"time"

	"github.com/magnum-gitops/magnum-gitops/generator"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/gitrepo"
)

// GitSink commits plans to a Git repository and pushes them, without force.
type GitSink struct {
	Repo *gitrepo.Repo
	// ReviewBranch, when set, is a text/template for review-mode branches, e.g.
	// "magnum/{{.StackID}}/{{.EventID}}": each event goes to its own branch and the
	// configured branch is left alone.
	ReviewBranch string
}

// branchVars are the fields a ReviewBranch template can use.
type branchVars struct{ StackID, EventID, ClusterUUID, Operation string }

// Written is what a sink did with one event: the plan and, once pushed, its commit.
type Written struct {
	Plan *Plan
	// Commit is the pushed commit; empty when nothing changed.
	Commit string
	// Branch is where it went.
	Branch string
	// Attempts counts push attempts (1 when nobody raced us).
	Attempts int
	// PullRequestURL is set when a review branch got a pull request.
	PullRequestURL string
	// Timings are the steps' durations, for metrics.
	Timings Timings
	// Carried is set when the branch held the event already, as its cluster's record: a
	// retry of an event committed before (errCarried); nothing was committed.
	Carried bool
}

// Timings are how long an event spent in each step. Commit (building the commits, plans
// included) and Push are its group's when events are committed together.
type Timings struct {
	Render, Commit, Push time.Duration
	// Answer is from the operation's arrival to its answer: what its client waited, and
	// what a caller that hands many over at once (Converge) cannot time itself.
	Answer time.Duration
}

// NoOp reports whether the repository already held the change.
func (o *Written) NoOp() bool { return o.Commit == "" }

// Apply runs the pipeline for one event and commits the plan. When the remote moved, the
// plan is made again on the new head, so a Secret whose plaintext another writer already
// committed keeps that writer's ciphertext and identical intent never conflicts.
func (s *GitSink) Apply(ctx context.Context, p *Pipeline, ev *v1alpha1.ClusterEvent) (*Written, error) {
	t0 := time.Now()
	res, err := p.Render(ctx, ev)
	if err != nil {
		return nil, err
	}
	out := &Written{Timings: Timings{Render: time.Since(t0)}}
	var branch string
	if s.ReviewBranch != "" {
		if branch, err = s.reviewBranch(ev, res.ReleaseName); err != nil {
			return nil, err
		}
	}
	c, err := s.commitPlan(ctx, branch, s.plan(p, ev, res, branch, out))
	if err != nil {
		return out, stepError("push", err)
	}
	out.setResult(&c.Result)
	out.Carried = c.Carried
	return out, nil
}

// plan plans the event against a tree: the head, and the new head again when the head
// moved under it, so a Secret another writer already committed with the same plaintext
// keeps that writer's ciphertext, and identical intent never conflicts.
func (s *GitSink) plan(p *Pipeline, ev *v1alpha1.ClusterEvent, res *generator.Result, branch string, out *Written) planFunc {
	return func(base gitrepo.Tree) (gitrepo.Change, error) {
		if err := checkReusedID(base, recordPath(res), ev); err != nil {
			return gitrepo.Change{}, err
		}
		pl, err := p.Plan(ev, res, base)
		if err != nil {
			return gitrepo.Change{}, err
		}
		out.Plan = pl
		if pl.NoOp() {
			return gitrepo.Change{}, errNothingToDo // Plan decides "unchanged", on base
		}
		c := pl.Commit
		if branch != "" {
			c.Branch, c.Review = branch, true
		}
		return c, nil
	}
}

// setResult copies what gitrepo did into the outcome.
func (o *Written) setResult(gr *gitrepo.Result) {
	if gr == nil {
		return
	}
	if !gr.NoOp {
		o.Commit = gr.Commit.String()
	}
	o.Branch, o.Attempts, o.PullRequestURL = gr.Branch, gr.Attempts, gr.PullRequestURL
	o.Timings.Commit, o.Timings.Push = gr.Build, gr.Push
}

// reviewBranch renders the review branch of an event. An empty result is refused here;
// gitrepo refuses the configured branch and protected ones.
func (s *GitSink) reviewBranch(ev *v1alpha1.ClusterEvent, stackID string) (string, error) {
	t, err := template.New("branch").Option("missingkey=error").Parse(s.ReviewBranch)
	if err != nil {
		return "", &failure{Kind: KindInvalid, Step: "commit", Err: &v1alpha1.FieldError{Field: "git.review.branch_template", Message: err.Error()}}
	}
	var b bytes.Buffer
	vars := branchVars{StackID: stackID, EventID: cmp.Or(ev.ID, string(ev.Operation)), ClusterUUID: ev.Cluster.UUID, Operation: string(ev.Operation)}
	if err := t.Execute(&b, vars); err != nil {
		return "", &failure{Kind: KindInvalid, Step: "commit", Err: &v1alpha1.FieldError{Field: "git.review.branch_template", Message: err.Error()}}
	}
	if b.Len() == 0 {
		return "", &failure{Kind: KindInvalid, Step: "commit", Err: &v1alpha1.FieldError{Field: "git.review.branch_template", Message: fmt.Sprintf("renders to an empty branch name for event %q", ev.ID)}}
	}
	return b.String(), nil
}

// resyncPlan plans a cluster's resync against a tree (PlanResync): the head, and the new
// head again when the head moved under it.
func (s *GitSink) resyncPlan(ctx context.Context, p *Pipeline, rec *ResyncRecord, out *Written) planFunc {
	return func(base gitrepo.Tree) (gitrepo.Change, error) {
		t0 := time.Now()
		pl, err := p.PlanResync(ctx, rec, base)
		out.Timings.Render += time.Since(t0)
		if err != nil {
			return gitrepo.Change{}, err
		}
		if pl == nil {
			return gitrepo.Change{}, errNothingToDo
		}
		out.Plan = pl
		return pl.Commit, nil
	}
}
