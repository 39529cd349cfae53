package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/magnum-gitops/magnum-gitops/internal/config"
	"github.com/magnum-gitops/magnum-gitops/reconciler"
)

// suspendOptions are suspend cluster's and resume cluster's flags.
type suspendOptions struct {
	configFile, project, reason string
}

// newSuspendCommand is "suspend cluster NAME", as flux suspend helmrelease NAME is, but
// committed: the suspension lives in Git, where every later render keeps it.
func newSuspendCommand() *cobra.Command {
	return suspendParent(true, "suspend", "Stop Flux acting on a cluster, in a commit that every later render keeps",
		`Suspend one cluster in Git: its HelmRelease gets spec.suspend: true (with format argo,
its Application loses its automated sync), and the cluster's record (magnum-cluster.yaml)
keeps the suspension, so that every later Magnum event and resync renders the cluster
suspended too, until "magnum-gitops resume cluster". Magnum's operations are still
committed meanwhile; Flux applies them on resume. One commit, pushed without force (in
review mode to a review branch); a cluster already suspended makes none.

CLUSTER is the cluster's Magnum name, UUID or stack id; --project picks among clusters
of the same name. See docs/runbooks.md, "Suspending one cluster".`,
		`  magnum-gitops suspend cluster prod-a --config /etc/magnum-gitops/config.yaml --reason "INC-1234: repairing the control plane by hand"`)
}

// newResumeCommand is "resume cluster NAME": the suspension leaves the record and the
// HelmRelease, in one commit.
func newResumeCommand() *cobra.Command {
	return suspendParent(false, "resume", "Let Flux act on a suspended cluster again, in a commit",
		`Resume a cluster "magnum-gitops suspend cluster" suspended: spec.suspend leaves its
HelmRelease (with format argo, its Application gets its automated sync back) and the
suspension leaves its record, in one commit. Flux then applies what Git holds for the
cluster, the Magnum operations committed while it was suspended included. A cluster not
suspended makes no commit.

CLUSTER is the cluster's Magnum name, UUID or stack id; --project picks among clusters
of the same name.`,
		`  magnum-gitops resume cluster prod-a --config /etc/magnum-gitops/config.yaml`)
}

// suspendParent is "suspend" or "resume" with its one kind, "cluster". Named like
// flux suspend/resume, so that a second kind can follow.
func suspendParent(suspend bool, verb, short, long, example string) *cobra.Command {
	o := &suspendOptions{}
	cluster := &cobra.Command{
		Use:     "cluster CLUSTER --config FILE",
		Short:   short,
		Long:    long,
		Example: example,
		Args: func(cmd *cobra.Command, args []string) error {
			return config.Invalid(cobra.ExactArgs(1)(cmd, args))
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			req := reconciler.SuspendRequest{Suspend: suspend, Reason: o.reason}
			return o.run(cmd.Context(), cmd.OutOrStdout(), args[0], req)
		},
	}
	f := cluster.Flags()
	f.StringVar(&o.configFile, "config", "", "configuration file with a git section (required)")
	f.StringVar(&o.project, "project", "", "the cluster's project (id), when several clusters have its name")
	f.StringVar(&o.reason, "reason", "", "why, for the commit message"+map[bool]string{true: " and the cluster's record", false: ""}[suspend])
	_ = cluster.MarkFlagRequired("config")
	parent := &cobra.Command{
		Use:   verb,
		Short: short,
		// Without a kind, the help; with another, bad input (exit 2) that names the kind
		// rather than a flag only "cluster" takes.
		FParseErrWhitelist: cobra.FParseErrWhitelist{UnknownFlags: true},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmd.Help()
			}
			return config.Invalid(fmt.Errorf("unknown kind %q: %s cluster CLUSTER", args[0], verb))
		},
	}
	parent.AddCommand(cluster)
	return parent
}

// run finds the cluster in the repository and commits the request.
func (o *suspendOptions) run(ctx context.Context, stdout io.Writer, cluster string, req reconciler.SuspendRequest) error {
	file, err := loadConfig(ctx, o.configFile)
	if err != nil {
		return err
	}
	p, err := pipeline(file, false)
	if err != nil {
		return err
	}
	sink, err := gitSink(ctx, file)
	if err != nil {
		return err
	}
	rec, err := o.find(ctx, p, sink, cluster)
	if err != nil {
		return err
	}
	ev := rec.Event
	name := fmt.Sprintf("cluster %s (%s) in project %s", ev.Cluster.Name, ev.Cluster.UUID, ev.Cluster.ProjectID)
	out, err := sink.Suspend(ctx, p, rec, req)
	if err != nil {
		return err
	}
	// What the branch read holds decides the words of "nothing to commit": in review mode
	// the plan read the review branch, which may hold the change unmerged.
	has := rec.Suspended()
	switch {
	case out.NoOp() && has != nil && req.Suspend:
		fmt.Fprintf(stdout, "%s is already suspended%s: nothing to commit\n", name, reasonOf(has))
	case out.NoOp() && has == nil && !req.Suspend:
		fmt.Fprintf(stdout, "%s is not suspended: nothing to commit\n", name)
	case out.NoOp():
		fmt.Fprintf(stdout, "branch %s holds the %s of %s already, for review: nothing to commit\n", out.Branch, req.Verb(), name)
	default:
		fmt.Fprintf(stdout, "%s %s\n", out.Commit[:min(10, len(out.Commit))], out.Plan.Commit.Subject)
		if out.PullRequestURL != "" {
			fmt.Fprintf(stdout, "pull request: %s\n", out.PullRequestURL)
		} else if sink.ReviewBranch != "" {
			fmt.Fprintf(stdout, "on branch %s, for review\n", out.Branch)
		}
	}
	return nil
}

// reasonOf is a suspension's reason as run prints it.
func reasonOf(s *reconciler.Suspension) string {
	if s == nil || s.Reason == "" {
		return ""
	}
	return " (" + s.Reason + ")"
}

// find is the one record in the repository of the cluster named (its Magnum name, UUID or
// stack id, as resync --cluster takes it) in --project, when given. None, or several,
// is bad input: exit 2, nothing committed.
func (o *suspendOptions) find(ctx context.Context, p *reconciler.Pipeline, sink *reconciler.GitSink, cluster string) (*reconciler.ResyncRecord, error) {
	snap, err := sink.Repo.Snapshot()
	if err != nil {
		return nil, err
	}
	sel := resyncSelection{cluster: cluster, project: o.project}
	var found []*reconciler.ResyncRecord
	unread := 0
	err = p.ResyncRecords(ctx, snap, reconciler.ResyncOptions{
		Select:  sel.selector(),
		Refused: func(string, error) { unread++ },
		Queue: func(_ context.Context, recs []*reconciler.ResyncRecord) error {
			found = append(found, recs...)
			return nil
		}})
	if err != nil {
		return nil, err
	}
	what := "cluster " + cluster
	if o.project != "" {
		what += " in project " + o.project
	}
	switch len(found) {
	case 0:
		msg := fmt.Sprintf("%s: no such cluster in the repository (its Magnum name, UUID or stack id)", what)
		if unread > 0 {
			msg += fmt.Sprintf("; %d records do not decode (magnum-gitops resync --dry-run names them)", unread)
		}
		return nil, config.Invalid(errors.New(msg))
	case 1:
		return found[0], nil
	}
	var ids []string
	for _, rec := range found {
		ids = append(ids, rec.Event.Cluster.UUID+" in project "+rec.Event.Cluster.ProjectID)
	}
	return nil, config.Invalid(fmt.Errorf("%s: %d clusters match (%s): give its UUID, or --project", what, len(found), strings.Join(ids, ", ")))
}
