package reconciler

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
)

// A cluster's reconcile is a prologue (load), the ordered steps below over one scope, and
// one deferred summary (summarize): the shape of a Flux source-controller or Cluster API
// reconcile. Each step reads what the steps before it left in the scope and adds to it.
// A step returns nothing: what fails is one operation's (its error in the scope, which the
// summary answers it with) or the observe step's own progress, never the whole reconcile,
// since every member of a commit group must reach the commit step for the group to land.
type reconcileStep struct {
	name string
	run  func(r *Reconciler, ctx context.Context, sc *scope)
}

// steps are a cluster reconcile's steps, in order:
//
//	render   each waiting operation rendered and planned as a commit of the configured
//	         branch (a resync is rendered in its plan, on the tree its commit follows); in
//	         review mode each event goes to a branch of its own at once, a resync to a
//	         review branch of its own
//	observe  with nothing waiting, what the management cluster shows decides serve's own
//	         next commit: a delete's next phase (delete.go), a chained upgrade's next step
//	         (upgrade.go); not when only Magnum's view, which Git holds, asked for the
//	         reconcile (every poll would read every cluster's deployment)
//	commit   the configured branch's commits handed to the group's committer and one
//	         future waited on; then each review branch's commit, one push each
var steps = []reconcileStep{
	{"render", (*Reconciler).renderStep},
	{"observe", (*Reconciler).observeStep},
	{"commit", (*Reconciler).commitStep},
}

// scope is what one cluster's reconcile works on, loaded once in its prologue and filled
// by its steps.
type scope struct {
	uuid string
	// member is the reconcile's place in its group, and group the committer its
	// configured branch's commits go to.
	member int
	group  *committer
	// ops are the cluster's operations waiting for Git, oldest first. answered marks
	// those the prologue answered; the summary answers the others, with outs and errs.
	ops      []*operation
	answered []bool
	outs     []*Written
	errs     []error
	// main are the commits planned for the configured branch, in the order they must
	// land; review those for review branches of their own.
	main, review []change
	// del and up are the observe step's, when the cluster is being deleted or runs a
	// chained upgrade.
	del *deletion
	up  *upgrading
	// settled is set when only Magnum's views asked for the reconcile and Git holds them.
	settled bool
	// stats is what the reconcile cost on its own: its events (counted in the prologue)
	// and, in review mode, its pushes.
	stats groupStats
	// submitted is set once the reconcile handed its commits to the committer: every
	// member of a group must, whatever became of it, for the group to commit.
	submitted bool
	// result is what the caller hears of beyond the answers.
	result Result
}

// change is one commit a step planned and what takes its outcome: done returns the push
// Flux must hear of when the commit landed on the configured branch (nil otherwise).
type change struct {
	plan planFunc
	// branch is the change's review branch in review mode.
	branch string
	done   func(c committed, err error) *Push
}

// waiting reports whether operations of the scope wait for Git after the prologue.
func (sc *scope) waiting() bool {
	for _, answered := range sc.answered {
		if !answered {
			return true
		}
	}
	return false
}

// reconcile runs one cluster's steps in order, with the summary deferred.
func (r *Reconciler) reconcile(ctx context.Context, sc *scope) {
	defer r.summarize(sc)
	for _, st := range steps {
		st.run(r, ctx, sc)
	}
}

// renderStep renders each waiting operation and plans its commit.
func (r *Reconciler) renderStep(ctx context.Context, sc *scope) {
	review := r.Sink.ReviewBranch != ""
	for i, op := range sc.ops {
		if sc.answered[i] {
			continue
		}
		if op.follows && sc.errs[i-1] != nil {
			sc.errs[i] = &failure{Kind: kindOf(sc.errs[i-1]), Step: "render",
				Err: fmt.Errorf("not committed: %s, derived before it from Magnum's view, failed", sc.ops[i-1].ev.Operation)}
			continue
		}
		switch {
		case op.resync != nil:
			sc.outs[i] = &Written{}
			c := change{plan: r.Sink.resyncPlan(ctx, r.Pipeline, op.resync, sc.outs[i]), done: r.answers(sc, i)}
			if !review {
				sc.main = append(sc.main, c)
				continue
			}
			if err := r.onReviewBranch(&c, op.resync.Event, path.Base(path.Dir(op.resync.Path)), "resync"); err != nil {
				sc.errs[i] = err
				continue
			}
			sc.review = append(sc.review, c)
		case review:
			out, err := r.Sink.Apply(ctx, r.Pipeline, op.ev)
			sc.outs[i], sc.errs[i] = out, err
			if err == nil && out != nil {
				if !out.NoOp() {
					sc.stats.Pushes++
				}
				sc.stats.Retries += max(out.Attempts-1, 0)
			}
		default:
			sc.outs[i] = &Written{}
			res, err := r.render(ctx, op.ev, sc.outs[i])
			if err != nil {
				sc.errs[i] = err
				continue
			}
			sc.main = append(sc.main, change{plan: r.Sink.plan(r.Pipeline, op.ev, res, "", sc.outs[i]), done: r.answers(sc, i)})
		}
	}
}

// answers is what takes the outcome of the commit of the scope's i-th operation.
func (r *Reconciler) answers(sc *scope, i int) func(committed, error) *Push {
	return func(c committed, err error) *Push {
		switch {
		case err != nil:
			sc.errs[i] = err
		case c.Err != nil:
			sc.errs[i] = stepError("commit", c.Err)
		default:
			sc.outs[i].setResult(&c.Result)
			sc.outs[i].Carried = c.Carried
			if pl := sc.outs[i].Plan; !c.NoOp && pl != nil {
				return &Push{Namespace: pl.Result.Namespace, Paths: pl.Paths()}
			}
		}
		return nil
	}
}

// observeStep plans serve's own next commit for a cluster with nothing waiting: the next
// phase of its delete, or the next step of its chained upgrade, as far as the management
// cluster allows now. An operation waiting for Git changes what it would read, so it
// waits for the cluster's next reconcile.
func (r *Reconciler) observeStep(ctx context.Context, sc *scope) {
	if r.Management == nil || r.Clusters == nil || sc.waiting() || sc.settled {
		return
	}
	rec, ok := r.Clusters.Get(sc.uuid)
	if !ok {
		return
	}
	var c change
	var suffix string
	switch {
	case rec.Event.Operation == v1alpha1.DeleteCluster:
		d := r.deleteStep(ctx, rec)
		if sc.del = d; d == nil || d.plan == nil {
			return
		}
		suffix = "delete-" + strings.ToLower(d.progress.To.String())
		c = change{plan: d.plan, done: func(cm committed, err error) *Push {
			if r.deleted(d, cm, err); d.progress.Commit == "" {
				return nil
			}
			return &Push{Namespace: rec.Namespace}
		}}
	case len(sc.ops) == 0:
		u := r.upgradeStep(ctx, rec)
		if sc.up = u; u == nil || u.plan == nil {
			return
		}
		suffix = "upgrade-from-" + u.progress.From
		c = change{plan: u.plan, done: func(cm committed, err error) *Push {
			r.upgraded(u, cm, err)
			if pl := u.out.Plan; u.progress.Commit != "" && pl != nil {
				return &Push{Namespace: pl.Result.Namespace, Paths: pl.Paths()}
			}
			return nil
		}}
	default:
		return
	}
	if r.Sink.ReviewBranch == "" {
		sc.main = append(sc.main, c)
		return
	}
	if err := r.onReviewBranch(&c, rec.Event, rec.StackID, suffix); err != nil {
		c.done(committed{}, err)
		return
	}
	sc.review = append(sc.review, c)
}

// commitStep hands the configured branch's commits to the group's committer and waits on
// the future it gets back (it never waits for another reconcile, nor runs another's
// commit), then commits each review branch's change, one push each.
func (r *Reconciler) commitStep(ctx context.Context, sc *scope) {
	plans := make([]planFunc, len(sc.main))
	for i, c := range sc.main {
		plans[i] = c.plan
	}
	sc.submitted = true
	results, err := sc.group.submit(sc.member, plans, sc.stats).wait()
	for i, c := range sc.main {
		var push *Push
		if err != nil {
			push = c.done(committed{}, err)
		} else {
			push = c.done(results[i], nil)
		}
		if push != nil {
			sc.result.Pushed = append(sc.result.Pushed, *push)
		}
	}
	for _, c := range sc.review {
		res, err := r.Sink.commitPlans(ctx, c.branch, []planFunc{c.plan})
		if err != nil {
			c.done(committed{}, stepError("push", err))
			continue
		}
		c.done(res[0], nil)
	}
}
