package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"filippo.io/age"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	"github.com/go-git/go-git/v5/plumbing/transport/server"
	"github.com/spf13/cobra"

	"github.com/magnum-gitops/magnum-gitops/fixtures"
	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/gitrepo"
	"github.com/magnum-gitops/magnum-gitops/internal/sopsenc"
	"github.com/magnum-gitops/magnum-gitops/reconciler"
)

func newDemoCommand() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Commit the embedded example events to a local Git repository and show the result",
		Long: `Render every example ClusterEvent shipped in the binary (fixtures/events), in order,
and commit each as one commit to a local bare Git repository, the way the service does.
Secrets are encrypted with SOPS to an age key made for the demo. Prints the log with
the files each commit changed, and the final tree. Runs offline.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				d, err := os.MkdirTemp("", "magnum-gitops-demo-")
				if err != nil {
					return err
				}
				dir = filepath.Join(d, "clusters.git")
			}
			return runDemo(cmd.Context(), cmd.OutOrStdout(), dir)
		},
	}
	cmd.Flags().StringVar(&dir, "repo", "", "bare repository to create and commit to (default: a new temporary directory)")
	return cmd
}

func runDemo(ctx context.Context, w io.Writer, dir string) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if _, err := exec.LookPath("git-receive-pack"); err != nil {
		// No git on this machine: serve file:// remotes with go-git's own server.
		client.InstallProtocol("file", server.DefaultServer)
	}
	bare, err := git.PlainInit(dir, true)
	if err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	// A new repository's HEAD names master; the demo's branch is main.
	if err := bare.Storer.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, plumbing.NewBranchReferenceName("main"))); err != nil {
		return err
	}
	repo, err := gitrepo.Open(ctx, gitrepo.Options{
		URL:    "file://" + dir,
		Author: gitrepo.Signature{Name: "magnum-gitops demo", Email: "demo@magnum-gitops.invalid"},
	})
	if err != nil {
		return err
	}
	cfg := generator.DefaultConfig()
	enc, keyFile, err := demoEncrypter(dir)
	if err != nil {
		return err
	}
	p := &reconciler.Pipeline{Config: generator.MustSite(cfg), Secrets: reconciler.SecretPolicy{Encrypter: enc}}
	sink := &reconciler.GitSink{Repo: repo}
	names, err := fixtures.EventNames()
	if err != nil {
		return err
	}
	for _, name := range names {
		data, err := fixtures.Events.ReadFile("events/" + name)
		if err != nil {
			return err
		}
		ev, err := reconciler.Decode(data)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		out, err := sink.Apply(ctx, p, ev)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		what := "no change"
		if !out.NoOp() {
			what = out.Commit[:10]
		}
		fmt.Fprintf(w, "%-42s %s\n", name, what)
	}
	fmt.Fprintf(w, "\nRepository: %s\n", dir)
	fmt.Fprintf(w, "Secrets are SOPS-encrypted to a key made for this demo: %s\n", keyFile)
	fmt.Fprintf(w, "decrypt one with: SOPS_AGE_KEY_FILE=%s sops -d <file>\n\n", keyFile)
	if err := printLog(w, bare); err != nil {
		return err
	}
	return printTree(w, bare)
}

// demoEncrypter makes a fresh age identity and digest key for the demo, kept beside (not
// inside) the repository.
func demoEncrypter(dir string) (*sopsenc.Encrypter, string, error) {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		return nil, "", err
	}
	keyFile := strings.TrimSuffix(strings.TrimRight(dir, "/"), ".git") + ".agekey"
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

// printLog prints the branch history like git log --stat.
func printLog(w io.Writer, repo *git.Repository) error {
	ref, err := repo.Reference(plumbing.NewBranchReferenceName("main"), true)
	if err != nil {
		return err
	}
	iter, err := repo.Log(&git.LogOptions{From: ref.Hash()})
	if err != nil {
		return err
	}
	return iter.ForEach(func(c *object.Commit) error {
		fmt.Fprintf(w, "commit %s\nAuthor: %s <%s>\nDate:   %s\n\n", c.Hash, c.Author.Name, c.Author.Email, c.Author.When.Format("Mon Jan 2 15:04:05 2006 -0700"))
		for _, l := range strings.Split(strings.TrimRight(c.Message, "\n"), "\n") {
			fmt.Fprintf(w, "    %s\n", l)
		}
		stats, err := c.Stats()
		if err != nil {
			return err
		}
		fmt.Fprintln(w)
		for _, s := range stats {
			fmt.Fprintf(w, " %s | %d %s\n", s.Name, s.Addition+s.Deletion, strings.Repeat("+", min(s.Addition, 20))+strings.Repeat("-", min(s.Deletion, 20)))
		}
		fmt.Fprintln(w)
		return nil
	})
}

// printTree prints the tree of the branch head like tree(1).
func printTree(w io.Writer, repo *git.Repository) error {
	ref, err := repo.Reference(plumbing.NewBranchReferenceName("main"), true)
	if err != nil {
		return err
	}
	c, err := repo.CommitObject(ref.Hash())
	if err != nil {
		return err
	}
	t, err := c.Tree()
	if err != nil {
		return err
	}
	fmt.Fprintln(w, ".")
	var walk func(*object.Tree, string) error
	walk = func(t *object.Tree, indent string) error {
		entries := append([]object.TreeEntry(nil), t.Entries...)
		sort.Slice(entries, func(i, j int) bool { return entries[i].Name < entries[j].Name })
		for i, e := range entries {
			branch, next := "├── ", "│   "
			if i == len(entries)-1 {
				branch, next = "└── ", "    "
			}
			fmt.Fprintln(w, indent+branch+e.Name)
			if !e.Mode.IsFile() {
				sub, err := t.Tree(e.Name)
				if err != nil {
					return err
				}
				if err := walk(sub, indent+next); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk(t, "")
}
