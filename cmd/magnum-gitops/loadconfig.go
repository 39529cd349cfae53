package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/magnum-gitops/magnum-gitops/internal/config"
)

// osCloudKey carries --os-cloud in a command's context to loadConfig.
type osCloudKey struct{}

// addOSCloudFlag adds --os-cloud to every command, as the openstack CLI has it: the
// clouds.yaml entry, ahead of the configuration's openstack.cloud and of $OS_CLOUD.
func addOSCloudFlag(root *cobra.Command) {
	root.PersistentFlags().String("os-cloud", "", "the clouds.yaml entry to reach OpenStack with, as the openstack CLI's --os-cloud (overrides openstack.cloud and $OS_CLOUD)")
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if v, _ := cmd.Flags().GetString("os-cloud"); v != "" {
			cmd.SetContext(context.WithValue(cmd.Context(), osCloudKey{}, v))
		}
		return nil
	}
}

// loadConfig loads --config as config.Load does, then applies the flags every command
// takes that override the file (--os-cloud).
func loadConfig(ctx context.Context, path string) (*config.File, error) {
	file, err := config.Load(path)
	if err != nil {
		return nil, err
	}
	if v, ok := ctx.Value(osCloudKey{}).(string); ok {
		file.OpenStack.Cloud = v
	}
	return file, nil
}
