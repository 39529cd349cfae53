// Command magnum-gitops renders Magnum cluster events into a GitOps repository that Flux
// applies to a Cluster API management cluster, and reads cluster status back.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"

	"github.com/spf13/cobra"
)

func main() {
	if err := newRootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		if errors.Is(err, v1alpha1.ErrInvalidInput) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// errorsIsInput reports errors that blame the input, which are reported as they are.
func errorsIsInput(err error) bool { return errors.Is(err, v1alpha1.ErrInvalidInput) }

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
	root.AddCommand(newRenderCommand(), newApplyCommand(), newStatusCommand(), newDemoCommand())
	return root
}
