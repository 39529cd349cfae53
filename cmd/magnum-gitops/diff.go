package main

import (
	"context"
	"errors"
	"io"

	"github.com/spf13/cobra"

	"github.com/magnum-gitops/magnum-gitops/gitrepo"
	"github.com/magnum-gitops/magnum-gitops/reconciler"
)

// errDifferences makes diff exit 1, as kubectl diff and diff(1) do, without an error line.
var errDifferences = errors.New("differences found")

type diffOptions struct {
	filename, configFile, dir string
	insecurePlaintext         bool
}

func newDiffCommand() *cobra.Command {
	o := &diffOptions{}
	cmd := &cobra.Command{
		Use:   "diff -f EVENT --config FILE",
		Short: "Show what an event would change in the repository",
		Long: `Render one ClusterEvent and print, as a unified diff, what it would change in the
configured Git repository (or, with --dir, in a directory written by render --out-dir),
without changing anything. Secret values are never shown: a plaintext Secret's values
are masked and an encrypted Secret is only said to change.

Exit status: 0 when the repository already holds the event, 1 when it would change,
2 when the event or the configuration is invalid.`,
		Example: `  magnum-gitops diff -f event.yaml --config /etc/magnum-gitops/config.yaml
  magnum-gitops diff -f event.yaml --dir ./repo`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.filename, "filename", "f", "", "ClusterEvent file, or - for standard input (required)")
	f.StringVar(&o.configFile, "config", "", "configuration file; its git section names the repository")
	f.StringVar(&o.dir, "dir", "", "compare with this directory instead of the Git repository")
	f.BoolVar(&o.insecurePlaintext, "insecure-plaintext-secrets", false, "plan Secrets unencrypted (as render --insecure-plaintext-secrets writes them)")
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

func (o *diffOptions) run(ctx context.Context, stdin io.Reader, stdout io.Writer) error {
	file, err := loadConfig(ctx, o.configFile)
	if err != nil {
		return err
	}
	p, err := pipeline(file, o.insecurePlaintext)
	if err != nil {
		return err
	}
	ev, err := decodeInput(stdin, o.filename)
	if err != nil {
		return err
	}
	res, err := p.Render(ctx, ev)
	if err != nil {
		return inputError(o.filename, err)
	}
	var tree gitrepo.Tree
	if o.dir != "" {
		t, done, err := (&reconciler.DirSink{Root: o.dir}).Tree()
		if err != nil {
			return err
		}
		defer done()
		tree = t
	} else {
		sink, err := gitSink(ctx, file)
		if err != nil {
			return err
		}
		tree = sink.Repo
	}
	plan, err := p.Plan(ev, res, tree)
	if err != nil {
		return inputError(o.filename, err)
	}
	if plan.NoOp() {
		return nil
	}
	if err := plan.WriteDiff(stdout); err != nil {
		return err
	}
	return errDifferences
}
