package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/internal/config"
	"github.com/magnum-gitops/magnum-gitops/reconciler"
)

func newResyncCommand() *cobra.Command {
	var configFile string
	var dryRun bool
	var sel resyncSelection
	cmd := &cobra.Command{
		Use:   "resync --config FILE",
		Short: "Render every cluster in the repository again with this version of magnum-gitops",
		Long: `Render every cluster of the configured repository again from the event record kept
beside its manifests (magnum-cluster.yaml), and commit one reviewable change per cluster
whose output differs: what upgrading magnum-gitops changes. Unchanged clusters make no
commit; Secrets are never re-encrypted. With --dry-run, print the diff instead.
--cluster and --project resync one cluster (its Magnum name, UUID or stack id) or
one project's clusters.`,
		Example: `  magnum-gitops resync --config /etc/magnum-gitops/config.yaml --dry-run
  magnum-gitops resync --config /etc/magnum-gitops/config.yaml --cluster prod-a
  magnum-gitops resync --config /etc/magnum-gitops/config.yaml --project 9f3c1b2a4d5e4f6a8b7c6d5e4f3a2b1c`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runResync(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), configFile, dryRun, &sel)
		},
	}
	cmd.Flags().StringVar(&configFile, "config", "", "configuration file with a git section (required)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print what would change; commit nothing")
	cmd.Flags().StringVar(&sel.cluster, "cluster", "", "resync only this cluster: its Magnum name, UUID or stack id")
	cmd.Flags().StringVar(&sel.project, "project", "", "resync only the clusters of this project (id)")
	_ = cmd.MarkFlagRequired("config")
	return cmd
}

// resyncSelection is resync's --cluster and --project; empty selects every cluster.
type resyncSelection struct {
	cluster, project string
	matched          int
}

// selector is the ResyncOptions.Select of the selection, nil for every cluster; it counts
// the clusters it keeps. ResyncRecords calls it from one goroutine.
func (s *resyncSelection) selector() func(*v1alpha1.ClusterEvent) bool {
	if s.cluster == "" && s.project == "" {
		return nil
	}
	return func(ev *v1alpha1.ClusterEvent) bool {
		c := ev.Cluster
		if s.cluster != "" && s.cluster != c.Name && !strings.EqualFold(s.cluster, c.UUID) && s.cluster != c.StackID {
			return false
		}
		if s.project != "" && s.project != c.ProjectID {
			return false
		}
		s.matched++
		return true
	}
}

// none is the error of a selection that matched no cluster in the repository.
func (s *resyncSelection) none() error {
	if s.cluster == "" && s.project == "" || s.matched > 0 {
		return nil
	}
	var what []string
	if s.cluster != "" {
		what = append(what, "--cluster "+s.cluster)
	}
	if s.project != "" {
		what = append(what, "--project "+s.project)
	}
	return fmt.Errorf("no cluster in the repository matches %s", strings.Join(what, " "))
}

func runResync(ctx context.Context, stdout, stderr io.Writer, configFile string, dryRun bool, sel *resyncSelection) error {
	file, err := loadConfig(ctx, configFile)
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
	// A cluster whose record does not render is named and left; the others go on, and the
	// command fails at the end.
	refused := 0
	refuse := func(record string, err error) {
		refused++
		fmt.Fprintf(stderr, "%s: %v\n", record, err)
	}
	failRefused := func() error {
		if refused == 0 {
			return nil
		}
		return config.Invalid(fmt.Errorf("%d clusters' records do not render (see above); they were left as they are", refused))
	}
	if dryRun {
		// Every record read from one commit and planned on it, as each cluster's
		// reconcile would plan it on the branch head.
		snap, err := sink.Repo.Snapshot()
		if err != nil {
			return err
		}
		changed := 0
		err = p.ResyncRecords(ctx, snap, reconciler.ResyncOptions{Refused: refuse, Select: sel.selector(), Queue: func(ctx context.Context, records []*reconciler.ResyncRecord) error {
			for _, rec := range records {
				pl, err := p.PlanResync(ctx, rec, snap)
				switch {
				case errors.Is(err, reconciler.ErrInvalid):
					refuse(rec.Path, err)
					continue
				case err != nil:
					return err
				case pl == nil:
					continue
				}
				fmt.Fprintf(stdout, "# %s\n", pl.Commit.Subject)
				if err := pl.WriteDiff(stdout); err != nil {
					return err
				}
				changed++
			}
			return nil
		}})
		if err != nil {
			return err
		}
		if err := sel.none(); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "%d clusters would change\n", changed)
		return failRefused()
	}
	if err := sink.Publish(ctx, file.Site); err != nil {
		return err
	}
	// Batches of the Reconciler's default MaxGroup (100) clusters, one push each, the next
	// read meanwhile; each cluster rendered again in its reconcile.
	r, stop := runReconciler(ctx, p, sink, 0)
	changed := 0
	var failed error // the others were pushed: say so before failing
	o := r.ResyncOptions(refuse, func(rec *reconciler.ResyncRecord, sum reconciler.Summary) {
		switch {
		case sum.Err() != nil:
			failed = cmp.Or(failed, sum.Err())
		case !sum.NoOp:
			changed++
			fmt.Fprintf(stderr, "%s resync of cluster %s (%s)\n", sum.Revision[:10], rec.Event.Cluster.Name, sum.StackID)
		}
	})
	o.Select = sel.selector()
	err = p.ResyncRecords(ctx, sink.Repo, o)
	stop()
	if err := cmp.Or(err, failed, sel.none()); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "%d clusters changed\n", changed)
	return failRefused()
}
