package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/internal/config"
	"github.com/magnum-gitops/magnum-gitops/reconciler"

	"github.com/spf13/cobra"

	"github.com/magnum-gitops/magnum-gitops/generator"
)

type renderOptions struct {
	filename          string
	configFile        string
	output            string
	outDir            string
	format            string
	insecurePlaintext bool
}

func newRenderCommand() *cobra.Command {
	o := &renderOptions{}
	cmd := &cobra.Command{
		Use:   "render -f EVENT",
		Short: "Render a Magnum cluster event into chart values and Flux manifests",
		Long: `Render one ClusterEvent document (YAML or JSON) into the openstack-cluster chart
values, the Flux HelmRelease and its HelmRepository, the Namespace, the cluster's
Secrets and a kustomization.yaml, following magnum-capi-helm 1.4.0.

Output formats:
  yaml    every manifest as a multi-document stream (default)
  values  only the chart values, as JSON (what the driver pipes to helm)
  json    a JSON report: stack_id (generated when the cluster had none), namespace,
          chart, values, deviations from the driver and the files

With --out-dir the repository layout is written under DIR instead (all files or none).
Secrets are encrypted with SOPS for the age recipients of the configuration's sops
section; without recipients, writing them fails unless --insecure-plaintext-secrets
is given.`,
		Example: `  magnum-gitops render -f fixtures/events/create-basic.yaml -o values
  magnum-gitops render -f event.yaml --config magnum-gitops.yaml --out-dir ./repo
  cat event.json | magnum-gitops render -f - -o json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.filename, "filename", "f", "", "ClusterEvent file to render, or - for standard input (required)")
	f.StringVar(&o.configFile, "config", "", "configuration file (magnum, flux, values_overlay sections)")
	f.StringVarP(&o.output, "output", "o", "yaml", "output format: yaml, values or json")
	f.StringVar(&o.outDir, "out-dir", "", "write the repository layout under this directory")
	f.StringVar(&o.format, "format", "", "what deploys each cluster: flux (HelmRelease) or argo (Argo CD Application); default from config, else flux")
	f.BoolVar(&o.insecurePlaintext, "insecure-plaintext-secrets", false,
		"write Secrets (application credential, CA keys) unencrypted; never push such output")
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

func (o *renderOptions) run(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) error {
	switch o.output {
	case "yaml", "values", "json":
	default:
		return config.Invalid(fmt.Errorf("--output: unknown format %q (yaml, values, json)", o.output))
	}
	file, err := loadConfig(ctx, o.configFile)
	if err != nil {
		return err
	}
	if o.format != "" {
		file.Config.Format = o.format
		if file.Site, err = generator.NewSite(file.Config); err != nil {
			return fmt.Errorf("--format: %w", err)
		}
	}
	p, err := pipeline(file, o.insecurePlaintext)
	if err != nil {
		return err
	}
	ev, err := decodeInput(stdin, o.filename)
	if err != nil {
		return err
	}
	if o.outDir != "" {
		sink := &reconciler.DirSink{Root: o.outDir}
		out, err := sink.Apply(ctx, p, ev)
		if err != nil {
			return inputError(o.filename, err)
		}
		fmt.Fprintf(stderr, "rendered %s into %s (%d files changed)\n", out.Plan.Result, o.outDir, len(out.Plan.Changes))
		return nil
	}
	res, err := p.Render(ctx, ev)
	if err != nil {
		return inputError(o.filename, err)
	}
	if o.output == "values" {
		return writeJSON(stdout, res.Values)
	}
	if o.output == "json" {
		// The report shows no Secret, so it needs no encryption.
		p.Secrets.Omit = p.Secrets.Encrypter == nil && !p.Secrets.Plaintext
	}
	plan, err := p.Plan(ev, res, nil) // against an empty repository: every file
	if err != nil {
		return err
	}
	if o.output == "json" {
		return writeJSON(stdout, renderReport{Result: res, Files: plan.Files.Paths()})
	}
	_, err = stdout.Write(plan.Files.Stream())
	return err
}

// renderReport is the -o json document.
type renderReport struct {
	*generator.Result
	Files []string `json:"files"`
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func readInput(stdin io.Reader, name string) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(stdin)
	}
	return os.ReadFile(name)
}

// decodeInput reads and decodes a ClusterEvent file (- for standard input).
func decodeInput(stdin io.Reader, name string) (*v1alpha1.ClusterEvent, error) {
	data, err := readInput(stdin, name)
	if err != nil {
		return nil, config.Invalid(err) // -f names no readable file: bad input, as --config's would be
	}
	ev, err := reconciler.Decode(data)
	if err != nil {
		return nil, inputError(name, err)
	}
	return ev, nil
}

// inputError puts the file name in front of an error that blames it.
func inputError(name string, err error) error {
	if errors.Is(err, reconciler.ErrInvalid) {
		return fmt.Errorf("%s:\n%w", name, err)
	}
	return err
}
