package reconciler

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"text/template"
	"time"

	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/magnum"

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

// Outcome is what a sink did with one event.
type Outcome struct {
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
}

// Timings are how long an event spent in each step. Commit (building the commits, plans
// included) and Push are its group's when events are committed together.
type Timings struct {
	Render, Commit, Push time.Duration
}

// NoOp reports whether the repository already held the change.
func (o *Outcome) NoOp() bool { return o.Commit == "" }

// Apply runs the pipeline for one event and commits the plan. When the remote moved, the
// plan is made again on the new head, so a Secret whose plaintext another writer already
// committed keeps that writer's ciphertext and identical intent never conflicts.
func (s *GitSink) Apply(ctx context.Context, p *Pipeline, ev *v1alpha1.ClusterEvent) (*Outcome, error) {
	t0 := time.Now()
	res, err := p.Render(ctx, ev)
	if err != nil {
		return nil, err
	}
	out := &Outcome{Timings: Timings{Render: time.Since(t0)}}
	var branch string
	if s.ReviewBranch != "" {
		if branch, err = s.reviewBranch(ev, res.ReleaseName); err != nil {
			return nil, err
		}
	}
	gr, err := s.Repo.ApplyBuilder(ctx, s.builder(p, ev, res, branch, out))
	if err != nil {
		return out, stepError("push", err)
	}
	out.setResult(gr)
	return out, nil
}

// builder plans the event against the tree it will be committed on: called again on the
// new head when the remote moved, so a Secret another writer already committed with the
// same plaintext keeps that writer's ciphertext, and identical intent never conflicts.
func (s *GitSink) builder(p *Pipeline, ev *v1alpha1.ClusterEvent, res *generator.Result, branch string, out *Outcome) gitrepo.Builder {
	return func(base gitrepo.Tree) (gitrepo.Change, error) {
		if err := checkReusedID(base, recordPath(p.Config, res), ev); err != nil {
			return gitrepo.Change{}, err
		}
		pl, err := p.Plan(ev, res, base)
		if err != nil {
			return gitrepo.Change{}, err
		}
		out.Plan = pl
		c := pl.Commit
		if branch != "" {
			c.Branch, c.Review = branch, true
		}
		return c, nil
	}
}

// setResult copies what gitrepo did into the outcome.
func (o *Outcome) setResult(gr *gitrepo.Result) {
	if gr == nil {
		return
	}
	if !gr.NoOp {
		o.Commit = gr.Commit.String()
	}
	o.Branch, o.Attempts, o.PullRequestURL = gr.Branch, gr.Attempts, gr.PullRequestURL
	o.Timings.Commit, o.Timings.Push = gr.Build, gr.Push
}

// ApplyGroup runs the pipeline for several events and commits them in order, one commit
// each, with one push: what the service does with events that arrive together. Each event
// gets its own outcome and error; an event that fails (invalid, conflicting) is left out
// and the others land. err is for a failure of the whole group, which pushed nothing.
func (s *GitSink) ApplyGroup(ctx context.Context, p *Pipeline, events []*v1alpha1.ClusterEvent) ([]*Outcome, []error, error) {
	outs := make([]*Outcome, len(events))
	errs := make([]error, len(events))
	var builders []gitrepo.Builder
	var index []int
	for i, ev := range events {
		outs[i] = &Outcome{}
		t0 := time.Now()
		res, err := p.Render(ctx, ev)
		outs[i].Timings.Render = time.Since(t0)
		if err != nil {
			errs[i] = err
			continue
		}
		builders = append(builders, s.builder(p, ev, res, "", outs[i]))
		index = append(index, i)
	}
	if len(builders) == 0 {
		return outs, errs, nil
	}
	results, err := s.Repo.ApplyGroup(ctx, builders)
	if err != nil {
		return outs, errs, stepError("push", err)
	}
	for k, r := range results {
		i := index[k]
		if r.Err != nil {
			errs[i] = stepError("commit", r.Err)
			continue
		}
		outs[i].setResult(&r.Result)
	}
	return outs, errs, nil
}

// reviewBranch renders the review branch of an event. An empty result is refused here;
// gitrepo refuses the configured branch and protected ones.
func (s *GitSink) reviewBranch(ev *v1alpha1.ClusterEvent, stackID string) (string, error) {
	t, err := template.New("branch").Option("missingkey=error").Parse(s.ReviewBranch)
	if err != nil {
		return "", &Error{Kind: KindInvalid, Step: "commit", Err: &v1alpha1.FieldError{Field: "git.review.branch_template", Message: err.Error()}}
	}
	var b bytes.Buffer
	vars := branchVars{StackID: stackID, EventID: cmp.Or(ev.ID, string(ev.Operation)), ClusterUUID: ev.Cluster.UUID, Operation: string(ev.Operation)}
	if err := t.Execute(&b, vars); err != nil {
		return "", &Error{Kind: KindInvalid, Step: "commit", Err: &v1alpha1.FieldError{Field: "git.review.branch_template", Message: err.Error()}}
	}
	if b.Len() == 0 {
		return "", &Error{Kind: KindInvalid, Step: "commit", Err: &v1alpha1.FieldError{Field: "git.review.branch_template", Message: fmt.Sprintf("renders to an empty branch name for event %q", ev.ID)}}
	}
	return b.String(), nil
}

// Resync commits the resync of one cluster: its record rendered again by the current
// generator. Nothing is committed when the output did not move.
func (s *GitSink) Resync(ctx context.Context, p *Pipeline, pl *Plan) (*Outcome, error) {
	res, ev := pl.Result, pl.Event
	out := &Outcome{}
	rp := recordPath(p.Config, res)
	planned := pl.record // the record the plan was rendered from
	if planned == nil {
		return nil, &Error{Kind: KindInvalid, Step: "commit", Err: errors.New("resync: a plan not made by ResyncPlans")}
	}
	gr, err := s.Repo.ApplyBuilder(ctx, func(base gitrepo.Tree) (gitrepo.Change, error) {
		// An event committed since the plan was made (here or by another replica) is newer
		// than the record resync rendered: committing the old one would undo it.
		cur, ok, err := base.ReadFile(rp)
		if err != nil {
			return gitrepo.Change{}, stepError("read", err)
		}
		if !ok || !bytes.Equal(cur, planned) {
			return gitrepo.Change{}, gitrepo.ErrSkipChange
		}
		fresh, err := p.Plan(ev, res, base)
		if err != nil {
			return gitrepo.Change{}, err
		}
		asResync(fresh)
		out.Plan = fresh
		return fresh.Commit, nil
	})
	if err != nil {
		return out, stepError("push", err)
	}
	out.setResult(gr)
	return out, nil
}

// RemoveSecrets commits the first step of a delete's second phase, once the CAPI Cluster
// is gone: the Secret files leave the cluster's directory (generator.SecretsRemoved), and
// the directory stays, saying in Git that the delete is unfinished. It returns the names
// of the Secrets the directory held (Flux does not prune them: they carry the prune
// guard) and the commit; none and "" when the Secret files had left already.
func (s *GitSink) RemoveSecrets(ctx context.Context, cfg *generator.Config, rec ClusterRecord) (secrets []string, commit string, err error) {
	names, err := s.Repo.ListDir(generator.ClusterDir(cfg, rec.Namespace, rec.StackID))
	if err != nil {
		return nil, "", stepError("read", err)
	}
	fs, removed, err := generator.SecretsRemoved(cfg, rec.Namespace, rec.StackID, names)
	if err != nil || len(removed) == 0 {
		return nil, "", stepError("encode", err)
	}
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
	gr, err := s.Repo.Apply(ctx, change)
	if err != nil {
		return nil, "", stepError("push", err)
	}
	if !gr.NoOp {
		commit = gr.Commit.String()
	}
	return secrets, commit, nil
}

// FinishDelete commits the end of a delete: what is left of the cluster's directory (an
// empty kustomization.yaml and the record) leaves Git, once the Secrets are gone from the
// management cluster. The commit is "" when the directory had left already.
func (s *GitSink) FinishDelete(ctx context.Context, cfg *generator.Config, rec ClusterRecord) (commit string, err error) {
	files, err := s.Repo.ListFiles(generator.ClusterDir(cfg, rec.Namespace, rec.StackID))
	if err != nil || len(files) == 0 {
		return "", stepError("read", err)
	}
	change := gitrepo.Change{Files: map[string][]byte{},
		Subject:  fmt.Sprintf("magnum: deleted cluster %s (%s) in project %s is gone", rec.Event.Cluster.Name, rec.StackID, rec.Event.Cluster.ProjectID),
		Body:     "Its Secrets were deleted from the management cluster; the rest of its directory goes.",
		Trailers: deleteTrailers(rec, OperationDeleteComplete)}
	for _, f := range files {
		change.Files[f] = nil
	}
	gr, err := s.Repo.Apply(ctx, change)
	if err != nil {
		return "", stepError("push", err)
	}
	if !gr.NoOp {
		commit = gr.Commit.String()
	}
	return commit, nil
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
// LedgerHistory commits, with the Secret names it recorded: a service that did not make
// it (restarted, or newly elected) needs both to finish the delete. When no such commit
// is that recent, commit is "" and secrets are every name the generator may have written.
func SecretsRemoval(ctx context.Context, repo *gitrepo.Repo, rec ClusterRecord) (commit string, secrets []string, err error) {
	n := 0
	err = repo.Walk(ctx, func(c gitrepo.CommitInfo) error {
		if n++; n > LedgerHistory {
			return gitrepo.ErrStopWalk
		}
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
