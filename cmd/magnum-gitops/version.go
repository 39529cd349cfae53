package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/internal/buildinfo"
	"github.com/magnum-gitops/magnum-gitops/internal/config"
)

// versionFormats are the --output values of `version`, as `flux version -o` takes them.
var versionFormats = []string{"text", "json", "yaml"}

func newVersionCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the release, commit, build date, Go version, platform and event API of this binary",
		Long: `Print what this binary was built as. The driver shim of the same release speaks the same
event API; serve answers the same document on GET /version.`,
		Example: `  magnum-gitops version
  magnum-gitops version -o json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return writeVersion(cmd.OutOrStdout(), buildinfo.Read(), output)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: "+strings.Join(versionFormats, ", "))
	return cmd
}

// setVersionFlag gives the root command --version, printing what `version` prints.
func setVersionFlag(root *cobra.Command) {
	i := buildinfo.Read()
	root.Version = i.Version
	var b strings.Builder
	_ = writeVersion(&b, i, "text")
	// A template of one quoted string: nothing in the text is read as template syntax.
	root.SetVersionTemplate("{{" + strconv.Quote(b.String()) + "}}")
}

// writeVersion writes i in one of versionFormats; another is bad input naming --output.
func writeVersion(w io.Writer, i buildinfo.Info, format string) error {
	switch format {
	case "json":
		b, err := json.MarshalIndent(i, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	case "yaml":
		b, err := yaml.Marshal(i)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	case "text":
		commit := cmp.Or(i.Commit, "unknown")
		if i.TreeState != "" {
			commit += " (" + i.TreeState + ")"
		}
		tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
		for _, row := range [][2]string{
			{"magnum-gitops:", i.Version}, {"commit:", commit}, {"build date:", cmp.Or(i.BuildDate, "unknown")},
			{"go:", i.GoVersion}, {"platform:", i.Platform}, {"event API:", strings.Join(i.EventAPIVersions, ", ")},
		} {
			fmt.Fprintf(tw, "%s\t%s\n", row[0], row[1])
		}
		return tw.Flush()
	}
	return config.Invalid(fmt.Errorf("--output: unknown format %q (%s)", format, strings.Join(versionFormats, ", ")))
}
