package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/cobra"
)

// TestOSCloudFlag: --os-cloud, given before or after the command's name, picks the
// clouds.yaml entry ahead of the configuration's openstack.cloud; without it the file's
// stands.
func TestOSCloudFlag(t *testing.T) {
	t.Parallel()
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("openstack: {cloud: from-file}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no flag: the file's", []string{"load"}, "from-file"},
		{"after the command", []string{"load", "--os-cloud", "from-flag"}, "from-flag"},
		{"before the command", []string{"--os-cloud=from-flag", "load"}, "from-flag"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := &cobra.Command{Use: "magnum-gitops", SilenceUsage: true, SilenceErrors: true}
			addOSCloudFlag(root)
			var got string
			root.AddCommand(&cobra.Command{Use: "load", RunE: func(cmd *cobra.Command, _ []string) error {
				file, err := loadConfig(cmd.Context(), cfg)
				if err == nil {
					got = file.OpenStack.Cloud
				}
				return err
			}})
			root.SetArgs(tc.args)
			if err := root.ExecuteContext(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("openstack.cloud = %q, want %q", got, tc.want)
			}
		})
	}
}
