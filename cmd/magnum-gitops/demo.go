package main

import (
	"crypto/rand"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"filippo.io/age"
	"github.com/magnum-gitops/magnum-gitops/fixtures"
	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/internal/sopsenc"
	"github.com/spf13/cobra"
)

func newDemoCommand() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Render the embedded example events into a repository directory and print its tree",
		Long: `Render every example ClusterEvent shipped in the binary (fixtures/events) into a
repository directory, in order, and print the resulting tree. Secrets are encrypted with
SOPS to an age key made for the demo. Runs offline.`,
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
	enc, keyFile, err := demoEncrypter(dir)
	if err != nil {
		return err
	}
	plan := secretsPlan{enc: enc}
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
		cdir := filepath.Join(dir, generator.ClusterDir(&cfg, res.Namespace, res.ReleaseName))
		opts, err := plan.options(res, existingFiles(cdir), func(n string) ([]byte, bool) {
			b, err := os.ReadFile(filepath.Join(cdir, n))
			return b, err == nil
		})
		if err != nil {
			return err
		}
		set, err := res.Files(&cfg, opts)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		plan.addCreationRules(&cfg, set)
		if err := writeFileSet(dir, set); err != nil {
			return err
		}
		fmt.Fprintf(w, "%-40s %s\n", name, res)
	}
	fmt.Fprintf(w, "\nSecrets are SOPS-encrypted to a key made for this demo: %s\n", keyFile)
	fmt.Fprintf(w, "decrypt one with: SOPS_AGE_KEY_FILE=%s sops -d <file>\n", keyFile)
	fmt.Fprintf(w, "\n%s\n", dir)
	return printTree(w, dir)
}

// demoEncrypter makes a fresh age identity and digest key for the demo, kept beside (not
// inside) the repository directory.
func demoEncrypter(dir string) (*sopsenc.Encrypter, string, error) {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		return nil, "", err
	}
	keyFile := strings.TrimRight(dir, "/") + ".agekey"
	if err := os.WriteFile(keyFile, []byte(id.String()+"\n"), 0o600); err != nil {
		return nil, "", err
	}
	digestKey := make([]byte, 32)
	if _, err := rand.Read(digestKey); err != nil {
		return nil, "", err
	}
	enc, err := sopsenc.New(sopsenc.Options{AgeRecipients: []string{id.Recipient().String()}, DigestKey: digestKey})
	return enc, keyFile, err
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
