package main

import (
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/magnum-gitops/magnum-gitops/reconciler"
)

func newApplyCommand() *cobra.Command {
	var filename, configFile string
	var insecurePlaintext bool
	cmd := &cobra.Command{
		Use:   "apply -f EVENT --config FILE",
		Short: "Render a Magnum cluster event and commit it to the configured Git repository",
		Long: `Render one ClusterEvent and commit the result to the Git repository of the
configuration's git section, as one commit with a reviewable message, pushed without
force; an event that changes nothing makes no commit. In review mode
(git.review.branch_template) the commit goes to its own branch, and a pull request
is opened when a forge is configured.`,
		Example: `  magnum-gitops apply -f event.yaml --config /etc/magnum-gitops/config.yaml`,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runApply(cmd, filename, configFile, insecurePlaintext)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&filename, "filename", "f", "", "ClusterEvent file, or - for standard input (required)")
	f.StringVar(&configFile, "config", "", "configuration file with a git section (required)")
	f.BoolVar(&insecurePlaintext, "insecure-plaintext-secrets", false, "commit Secrets unencrypted; never do this on a shared repository")
	_ = cmd.MarkFlagRequired("filename")
	_ = cmd.MarkFlagRequired("config")
	return cmd
}

func runApply(cmd *cobra.Command, filename, configFile string, insecurePlaintext bool) error {
	ctx := cmd.Context()
	file, err := loadConfig(cmd.Context(), configFile)
	if err != nil {
		return err
	}
	p, err := pipeline(file, insecurePlaintext)
	if err != nil {
		return err
	}
	ev, err := decodeInput(cmd.InOrStdin(), filename)
	if err != nil {
		return err
	}
	sink, err := gitSink(ctx, file)
	if err != nil {
		return err
	}
	out, err := sink.Apply(ctx, p, ev)
	sum := reconciler.NewSummary(ev, out, err)
	logSummary(slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil)), sum)
	if err != nil {
		return inputError(filename, err)
	}
	return writeJSON(cmd.OutOrStdout(), sum)
}

// logSummary logs an event's outcome once, with the keys the service uses.
func logSummary(log *slog.Logger, s reconciler.Summary) {
	attrs := []any{"event_id", s.EventID, "operation", s.Operation, "cluster", s.ClusterUUID, "stack_id", s.StackID,
		"namespace", s.Namespace, "outcome", s.Outcome}
	if s.Error != "" {
		log.Error("event failed", append(attrs, "error", s.Error)...)
		return
	}
	log.Info("event applied", append(attrs, "commit", s.Revision, "branch", s.Branch, "attempts", s.Attempts,
		"pull_request", s.PullRequestURL)...)
}
