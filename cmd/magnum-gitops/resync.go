package main

import (
	"cmp"
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/magnum-gitops/magnum-gitops/internal/config"
	"github.com/magnum-gitops/magnum-gitops/reconciler"
)

func newResyncCommand() *cobra.Command {
	var configFile string
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "resync --config FILE",
		Short: "Render every cluster in the repository again with this version of magnum-gitops",
		Long: `Render every cluster of the configured repository again from the event record kept
beside its manifests (magnum-cluster.yaml), and commit one reviewable change per cluster
whose output differs: what upgrading magnum-gitops changes. Unchanged clusters make no
commit; Secrets are never re-encrypted. With --dry-run, print the diff instead.`,
		Example: `  magnum-gitops resync --config /etc/magnum-gitops/config.yaml --dry-run`,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runResync(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), configFile, dryRun)
		},
	}
	cmd.Flags().StringVar(&configFile, "config", "", "configuration file with a git section (required)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print what would change; commit nothing")
	_ = cmd.MarkFlagRequired("config")
	return cmd
}

func runResync(ctx context.Context, stdout, stderr io.Writer, configFile string, dryRun bool) error {
	file, err := config.Load(configFile)
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
	plans, err := p.ResyncPlans(ctx, sink.Repo, nil)
	if err != nil {
		return err
	}
	if dryRun {
		for _, pl := range plans {
			fmt.Fprintf(stdout, "# %s\n", pl.Commit.Subject)
			if err := pl.WriteDiff(stdout); err != nil {
				return err
			}
		}
		fmt.Fprintf(stderr, "%d clusters would change\n", len(plans))
		return nil
	}
	// The reconciler serve runs, with nothing but the resync to commit: groups of
	// reconciler.DefaultMaxGroup clusters, one push each.
	r := &reconciler.Reconciler{Pipeline: p, Sink: sink}
	r.Start()
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { r.Run(rctx); close(done) }()
	sums := r.Resync(ctx, plans)
	stop()
	<-done
	var failed error // the others were pushed: say so before failing
	for i, sum := range sums {
		switch {
		case sum.Err() != nil:
			failed = cmp.Or(failed, sum.Err())
		case !sum.NoOp:
			fmt.Fprintf(stderr, "%s %s\n", sum.Revision[:10], plans[i].Commit.Subject)
		}
	}
	if failed != nil {
		return failed
	}
	fmt.Fprintf(stderr, "%d clusters changed\n", len(plans))
	return nil
}
