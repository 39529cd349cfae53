//go:build ignore

// The Argo CD processes the end-to-end tests run (and the git credential helper the
// repo-server runs), and nothing else: hack/argocd.sh builds
// this file inside Argo CD's own module instead of its ./cmd, which also links the API
// server, the CLI, Dex, notifications and the ApplicationSet controller (about a quarter
// more packages to compile in a cold CI run). Like Argo CD's own binary, it is one
// executable that acts by the name it is run under.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	appcontroller "github.com/argoproj/argo-cd/v3/cmd/argocd-application-controller/commands"
	cmpserver "github.com/argoproj/argo-cd/v3/cmd/argocd-cmp-server/commands"
	gitaskpass "github.com/argoproj/argo-cd/v3/cmd/argocd-git-ask-pass/commands"
	reposerver "github.com/argoproj/argo-cd/v3/cmd/argocd-repo-server/commands"
	"github.com/argoproj/argo-cd/v3/common"
	"github.com/argoproj/argo-cd/v3/util/log"
)

func init() {
	// klog (client-go's logger) at Argo CD's configured level and format, as its main does.
	klog.SetLogger(log.NewLogrusLogger(log.NewWithCurrentConfig()))
}

// Argo CD's main turns off gRPC's DNS SRV lookups (util/grpc.DisableSRVLookups), which the
// grpclb balancer turns on when it is linked: none of these programs links it, so
// they are off already, and that function would panic finding them so.
func main() {
	commands := map[string]func() *cobra.Command{
		common.CommandApplicationController: appcontroller.NewCommand,
		common.CommandRepoServer:            reposerver.NewCommand,
		common.CommandCMPServer:             cmpserver.NewCommand,
		// The repo-server's git asks it for credentials, as GIT_ASKPASS=argocd with
		// ARGOCD_BINARY_NAME naming this program.
		common.CommandGitAskPass: gitaskpass.NewCommand,
	}
	name := filepath.Base(os.Args[0])
	if env := os.Getenv("ARGOCD_BINARY_NAME"); env != "" {
		name = env
	}
	newCommand, ok := commands[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "%s: run this binary as %s, %s, %s or %s\n", name, common.CommandApplicationController,
			common.CommandRepoServer, common.CommandCMPServer, common.CommandGitAskPass)
		os.Exit(2)
	}
	if err := newCommand().Execute(); err != nil {
		os.Exit(1)
	}
}
