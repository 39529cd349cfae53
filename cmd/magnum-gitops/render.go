package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/spf13/cobra"
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
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
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

func (o *renderOptions) run(stdin io.Reader, stdout, stderr io.Writer) error {
	switch o.output {
	case "yaml", "values", "json":
	default:
		return fmt.Errorf("--output: unknown format %q (yaml, values, json)", o.output)
	}
	file, err := loadConfig(o.configFile)
	if err != nil {
		return err
	}
	cfg := &file.Config
	if o.format != "" {
		cfg.Format = o.format
		if err := cfg.Validate(); err != nil {
			return fmt.Errorf("--format: %w", err)
		}
	}
	data, err := readInput(stdin, o.filename)
	if err != nil {
		return err
	}
	ev, err := generator.DecodeEvent(data)
	if err != nil {
		return fmt.Errorf("%s:\n%w", o.filename, err)
	}
	if err := fillCABundle(ev, cfg); err != nil {
		return err
	}
	res, err := generator.Render(ev, cfg)
	if err != nil {
		return fmt.Errorf("%s:\n%w", o.filename, err)
	}
	enc, err := file.Sops.encrypter()
	if err != nil {
		return err
	}
	plan := secretsPlan{enc: enc, plaintext: o.insecurePlaintext}
	var names []string
	existing := func(string) ([]byte, bool) { return nil, false }
	if o.outDir != "" {
		dir := filepath.Join(o.outDir, generator.ClusterDir(cfg, res.Namespace, res.ReleaseName))
		names = existingFiles(dir)
		existing = func(name string) ([]byte, bool) {
			b, err := os.ReadFile(filepath.Join(dir, name))
			return b, err == nil
		}
	}
	opts, err := plan.options(res, names, existing)
	if err != nil && (o.outDir != "" || o.output == "yaml") {
		return err
	}
	if err != nil { // -o values and -o json print no Secret
		opts.Secrets = nil
	}
	fs, err := res.Files(cfg, opts)
	if err != nil {
		return err
	}
	plan.addCreationRules(cfg, fs)
	if o.outDir != "" {
		if err := writeFileSet(o.outDir, fs); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "rendered %s into %s (%d files, %d removed)\n", res, o.outDir, len(fs.Files), len(fs.Deletes))
		return nil
	}
	switch o.output {
	case "values":
		return writeJSON(stdout, res.Values)
	case "json":
		return writeJSON(stdout, report{Result: res, Files: fs.Paths()})
	}
	_, err = stdout.Write(fs.Stream())
	return err
}

// report is the -o json document.
type report struct {
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
