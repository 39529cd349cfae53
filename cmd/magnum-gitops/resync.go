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
	for start := 0; start < len(plans); start += reconciler.ResyncGroup {
		group := plans[start:min(start+reconciler.ResyncGroup, len(plans))]
		if dryRun {
			for _, pl := range group {
				fmt.Fprintf(stdout, "# %s\n", pl.Commit.Subject)
				if err := pl.WriteDiff(stdout); err != nil {
					return err
				}
			}
			continue
		}
		outs, errs, err := sink.Resync(ctx, p, group)
		if err != nil {
			return err
		}
		var failed error // the group's others were pushed: say so before stopping
		for i, pl := range group {
			switch {
			case errs[i] != nil:
				failed = cmp.Or(failed, errs[i])
			case !outs[i].NoOp():
				fmt.Fprintf(stderr, "%s %s\n", outs[i].Commit[:10], pl.Commit.Subject)
			}
		}
		if failed != nil {
			return failed
		}
	}
	if dryRun {
		fmt.Fprintf(stderr, "%d clusters would change\n", len(plans))
	} else {
		fmt.Fprintf(stderr, "%d clusters changed\n", len(plans))
	}
	return nil
}
