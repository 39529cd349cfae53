package reconciler

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"
	"unicode"

	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/gitrepo"
)

// maxReasonLen bounds a suspension's reason: a line of a commit message, not a report.
const maxReasonLen = 500

// SuspendRequest is what magnum-gitops suspend cluster (Suspend) or resume cluster asks of
// a cluster, and why.
type SuspendRequest struct {
	Suspend bool
	// Reason is the operator's, for the commit and, suspending, the record; it may be
	// empty.
	Reason string
}

// want is the suspension the request leaves in the record: nil for a resume.
func (r SuspendRequest) want() *Suspension {
	if !r.Suspend {
		return nil
	}
	return &Suspension{Reason: r.Reason}
}

// Suspend commits a cluster's suspension or its resume (req), as Apply
// commits an event: one commit, planned on the branch head and planned again when the
// remote moved; in review mode on a review branch of its own, named by the branch
// template with the cluster's last event id and "suspend" or "resume" as the event id.
// rec is the cluster's record as a read of the repository found it (ResyncRecords); the
// plan reads it again on the tree it commits on. When the cluster is already as asked, or
// a review branch holds the change already, nothing is committed: the Written is NoOp.
func (s *GitSink) Suspend(ctx context.Context, p *Pipeline, rec *ResyncRecord, req SuspendRequest) (*Written, error) {
	if rec == nil || rec.Event == nil {
		return nil, &failure{Kind: KindInvalid, Step: "accept", Err: errors.New("suspend: no record")}
	}
	if err := req.check(); err != nil {
		return nil, err
	}
	out := &Written{}
	plan := func(tree gitrepo.Tree) (gitrepo.Change, error) {
		t0 := time.Now()
		pl, err := p.PlanSuspend(rec.Path, req, tree)
		out.Timings.Render += time.Since(t0)
		if err != nil {
			return gitrepo.Change{}, err
		}
		out.Plan = pl
		if pl.NoOp() {
			return gitrepo.Change{}, errNothingToDo
		}
		return pl.Commit, nil
	}
	var branch string
	if s.ReviewBranch != "" {
		ev := *rec.Event
		ev.ID = cmp.Or(ev.ID, string(ev.Operation)) + "-" + req.Verb()
		var err error
		if branch, err = s.reviewBranch(&ev, path.Base(path.Dir(rec.Path))); err != nil {
			return nil, err
		}
		plan = onBranch(plan, branch)
	}
	c, err := s.commitPlan(ctx, branch, plan)
	if err != nil {
		return out, stepError("push", err)
	}
	out.setResult(&c.Result)
	return out, nil
}

// PlanSuspend plans a cluster's suspension or its resume (req) on tree:
// the cluster's record, at record, keeps the suspension beside its event, and its
// HelmRelease (or Application) is suspended or resumed as it is in the tree
// (generator.SetSuspended), not rendered again: in the middle of a chained upgrade a
// render would skip the chain's next steps, and an operator stopping Flux wants nothing
// else to change. The plan is NoOp when the record already says what req asks (a
// suspended cluster stays suspended with its first reason). A cluster whose record is gone,
// or whose directory deploys nothing (it is being deleted), is refused as invalid.
func (p *Pipeline) PlanSuspend(record string, req SuspendRequest, tree gitrepo.Tree) (*Plan, error) {
	if err := req.check(); err != nil {
		return nil, err
	}
	want := req.want()
	data, ok, err := tree.ReadFile(record)
	if err != nil {
		return nil, stepError("read", err)
	}
	if !ok {
		return nil, &failure{Kind: KindInvalid, Step: "read", Err: fmt.Errorf("%s: no such record: the cluster was deleted", record)}
	}
	ev, have, err := decodeRecord(data)
	if err != nil {
		return nil, stepError("read", err)
	}
	dir := path.Dir(record)
	res := &generator.Result{Operation: ev.Operation, EventID: ev.ID, ClusterUUID: ev.Cluster.UUID,
		ClusterName: ev.Cluster.Name, ProjectID: ev.Cluster.ProjectID,
		ReleaseName: path.Base(dir), Namespace: path.Base(path.Dir(dir)), Root: path.Dir(path.Dir(dir))}
	pl := &Plan{Event: ev, Result: res, Files: &generator.FileSet{Files: map[string][]byte{}},
		Changes: map[string][]byte{}, Old: map[string][]byte{}}
	if (have == nil) == (want == nil) {
		return pl, nil
	}
	deploy := path.Join(dir, p.Config.DeployFile())
	file, ok, err := tree.ReadFile(deploy)
	if err != nil {
		return nil, stepError("read", err)
	}
	if !ok {
		return nil, &failure{Kind: KindInvalid, Step: "read", Err: p.noDeployFile(dir, tree)}
	}
	if file, err = generator.SetSuspended(file, want != nil); err != nil {
		return nil, &failure{Kind: KindInvalid, Step: "encode", Err: fmt.Errorf("%s: %w", deploy, err)}
	}
	rec, err := encodeSuspendedRecord(ev, want)
	if err != nil {
		return nil, stepError("encode", err)
	}
	pl.Files.Files[deploy], pl.Files.Files[record] = file, rec
	for f, b := range pl.Files.Files {
		have, _, err := tree.ReadFile(f)
		if err != nil {
			return nil, stepError("diff", err)
		}
		if string(have) != string(b) {
			pl.Changes[f], pl.Old[f] = b, have
		}
	}
	pl.Commit = suspendChange(res, pl.Files, req, p.Config.Format)
	return pl, nil
}

// noDeployFile says why a cluster directory holds no deploy file of the configured
// format: the cluster is being deleted, or the directory was written in the other one.
func (p *Pipeline) noDeployFile(dir string, tree gitrepo.Tree) error {
	other, field := generator.HelmReleaseFile, "format: argo"
	if p.Config.Format != generator.FormatArgo {
		other, field = generator.ApplicationFile, "format: flux"
	}
	if _, ok, err := tree.ReadFile(path.Join(dir, other)); err == nil && ok {
		return fmt.Errorf("%s holds %s, not %s: the configuration's %s is not the format the repository was written in", dir, other, p.Config.DeployFile(), field)
	}
	return fmt.Errorf("%s holds no %s: the cluster is being deleted, and there is nothing left to suspend or resume", dir, p.Config.DeployFile())
}

// Suspended is the suspension the record holds, as read: nil when the cluster is not
// suspended.
func (rec *ResyncRecord) Suspended() *Suspension { return recordSuspension(rec.Data) }

// check refuses a reason that would not stay one line of a commit message: a line break
// would let it write lines of the message's own (a trailer), a control character or a
// long text has no place there either.
func (r SuspendRequest) check() error {
	switch {
	case strings.IndexFunc(r.Reason, unicode.IsControl) >= 0:
		return &failure{Kind: KindInvalid, Step: "accept", Err: errors.New("reason: one line of text, without control characters")}
	case len(r.Reason) > maxReasonLen:
		return &failure{Kind: KindInvalid, Step: "accept", Err: fmt.Errorf("reason: %d bytes, at most %d", len(r.Reason), maxReasonLen)}
	}
	return nil
}

// Verb names what the request asks: "suspend" or "resume".
func (r SuspendRequest) Verb() string {
	if r.Suspend {
		return "suspend"
	}
	return "resume"
}
