// Command magnum-gitops renders Magnum cluster events into a GitOps repository that Flux
// applies to a Cluster API management cluster, and reads cluster status back.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/internal/config"

	"github.com/spf13/cobra"
)

func main() {
	if err := newRootCommand().Execute(); err != nil {
		os.Exit(exitCode(os.Stderr, err))
	}
}

// exitCode reports a command's error and returns the exit status: 2 for bad input (an
// event, a flag or the configuration), 1 for everything else. "diff" found differences is
// 1 without a message.
func exitCode(stderr io.Writer, err error) int {
	if errors.Is(err, errDifferences) {
		return 1
	}
	fmt.Fprintln(stderr, "Error:", err)
	if errors.Is(err, v1alpha1.ErrInvalidInput) || cobraInputError(err) {
		return 2
	}
	return 1
}

// cobraInputError reports the bad input cobra refuses itself, before SetFlagErrorFunc and
// Args see it: a missing required flag and an unknown command. cobra gives them no type,
// only these messages; TestBadInputExitsTwo fails if they change.
func cobraInputError(err error) bool {
	msg := err.Error()
	return strings.HasPrefix(msg, "required flag(s) ") || strings.HasPrefix(msg, "unknown command ")
}

// noArgs is cobra.NoArgs whose refusal is bad input (exit 2).
func noArgs(cmd *cobra.Command, args []string) error { return config.Invalid(cobra.NoArgs(cmd, args)) }

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "magnum-gitops",
		Short: "Render Magnum cluster events into Flux HelmReleases in Git",
		Long: `magnum-gitops replaces the Magnum Cluster API Helm driver's "helm upgrade --install"
with GitOps: every Magnum cluster event becomes a Flux HelmRelease of the azimuth
openstack-cluster chart (plus its Secrets) in a Git repository that Flux applies to
the Cluster API management cluster.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	// A bad flag or argument is bad input (exit 2), as a bad event or configuration is.
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return config.Invalid(err) })
	root.AddCommand(newRenderCommand(), newApplyCommand(), newDiffCommand(), newServeCommand(), newResyncCommand(), newStatusCommand(), newSuspendCommand(), newResumeCommand(), newMigrateCommand(), newDemoCommand(), newCheckCommand(), newVersionCommand())
	setVersionFlag(root)
	addOSCloudFlag(root)
	return root
}
