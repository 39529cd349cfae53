package main

import (
	"fmt"
	"log/slog"

	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/gitrepo"
	"github.com/magnum-gitops/magnum-gitops/reconciler"
	"github.com/spf13/cobra"
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
		Args:    cobra.NoArgs,
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
	file, err := loadConfig(configFile)
	if err != nil {
		return err
	}
	data, err := readInput(cmd.InOrStdin(), filename)
	if err != nil {
		return err
	}
	ev, err := generator.DecodeEvent(data)
	if err != nil {
		return fmt.Errorf("%s:\n%w", filename, err)
	}
	if err := fillCABundle(ev, &file.Config); err != nil {
		return err
	}
	gopts, err := file.Git.options()
	if err != nil {
		return err
	}
	repo, err := gitrepo.Open(ctx, gopts)
	if err != nil {
		return err
	}
	c := &reconciler.Committer{Repo: repo, Config: &file.Config, ReviewBranch: file.Git.Review.BranchTemplate}
	enc, err := file.Sops.encrypter()
	if err != nil {
		return err
	}
	switch {
	case enc != nil:
		c.Secrets = enc.Encoder
		c.Extra = map[string][]byte{".sops.yaml": enc.CreationRules(file.Config.Flux.Path)}
	case insecurePlaintext:
		c.Secrets = func(func(string) ([]byte, bool)) generator.SecretEncoder { return generator.PlaintextSecrets }
	}
	res, rendered, err := c.Apply(ctx, ev)
	if err != nil {
		if rendered != nil && !errorsIsInput(err) {
			return fmt.Errorf("%s: %w", rendered, err)
		}
		return err
	}
	log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
	log.Info("applied", "operation", rendered.Operation, "cluster", rendered.ClusterUUID, "stack_id", rendered.ReleaseName,
		"namespace", rendered.Namespace, "branch", res.Branch, "commit", res.Commit.String(), "no_op", res.NoOp,
		"attempts", res.Attempts, "pull_request", res.PullRequestURL)
	return writeJSON(cmd.OutOrStdout(), map[string]any{"stack_id": rendered.ReleaseName, "stack_id_generated": rendered.ReleaseNameGenerated,
		"namespace": rendered.Namespace, "branch": res.Branch, "commit": commitString(res), "no_op": res.NoOp, "pull_request": res.PullRequestURL})
}

func commitString(r *gitrepo.Result) string {
	if r.NoOp {
		return ""
	}
	return r.Commit.String()
}
