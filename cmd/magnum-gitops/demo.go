package main

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/magnum-gitops/magnum-gitops/fixtures"
	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/spf13/cobra"
)

func newDemoCommand() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Render the embedded example events into a repository directory and print its tree",
		Long: `Render every example ClusterEvent shipped in the binary (fixtures/events) into a
repository directory, in order, and print the resulting tree. Secrets are written in
plaintext: the demo's material is fake. Runs offline.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				d, err := os.MkdirTemp("", "magnum-gitops-demo-")
				if err != nil {
					return err
				}
				dir = d
			}
			return runDemo(cmd.OutOrStdout(), dir)
		},
	}
	cmd.Flags().StringVar(&dir, "repo", "", "directory to render into (default: a new temporary directory)")
	return cmd
}

func runDemo(w io.Writer, dir string) error {
	cfg := generator.DefaultConfig()
	names, err := fixtures.EventNames()
	if err != nil {
		return err
	}
	for _, name := range names {
		data, err := fixtures.Events.ReadFile("events/" + name)
		if err != nil {
			return err
		}
		ev, err := generator.DecodeEvent(data)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		res, err := generator.Render(ev, &cfg)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		opts := generator.FileOptions{
			Secrets:  generator.PlaintextSecrets,
			Existing: existingFiles(filepath.Join(dir, generator.ClusterDir(&cfg, res.Namespace, res.ReleaseName))),
		}
		set, err := res.Files(&cfg, opts)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if err := writeFileSet(dir, set); err != nil {
			return err
		}
		fmt.Fprintf(w, "%-40s %s\n", name, res)
	}
	fmt.Fprintf(w, "\n%s\n", dir)
	return printTree(w, dir)
}

// printTree prints dir like tree(1).
func printTree(w io.Writer, dir string) error {
	var walk func(string, string) error
	walk = func(path, indent string) error {
		entries, err := os.ReadDir(path)
		if err != nil {
			return err
		}
		sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
		for i, e := range entries {
			if strings.HasPrefix(e.Name(), ".") {
				continue
			}
			branch, next := "├── ", "│   "
			if i == len(entries)-1 {
				branch, next = "└── ", "    "
			}
			fmt.Fprintln(w, indent+branch+e.Name())
			if e.Type()&fs.ModeDir != 0 {
				if err := walk(filepath.Join(path, e.Name()), indent+next); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk(dir, "")
}
