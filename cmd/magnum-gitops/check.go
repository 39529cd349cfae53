package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/discovery"

	"github.com/magnum-gitops/magnum-gitops/gitrepo"
	"github.com/magnum-gitops/magnum-gitops/internal/config"
	"github.com/magnum-gitops/magnum-gitops/status/kube"
)

// errChecksFailed: a remote the configuration names does not answer as it must (exit 1).
var errChecksFailed = errors.New("check: not every remote answers")

// checkTimeout bounds each remote's check.
const checkTimeout = 30 * time.Second

func newCheckCommand() *cobra.Command {
	var configFile, kubeconfig string
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Validate a configuration and reach every remote it names",
		Long: `Load the configuration as serve loads it (every bad key named, exit 2), then reach each
remote it names, as "flux check" does, one line each: the Git repository (a shallow fetch
of the branch, with its credentials), OpenStack's Keystone (a token, when the openstack
section or OS_* variables name a cloud), each management cluster (its API server, and
Flux's Kustomization API served there) and review mode's forge (the token, the repository,
push rights). A remote that does not answer is exit 1, named with its error.`,
		Example: `  magnum-gitops check --config /etc/magnum-gitops/config.yaml
  magnum-gitops check --config site.yaml --kubeconfig ~/.kube/management`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			file, err := loadConfig(cmd.Context(), configFile)
			if err != nil {
				return err
			}
			return runChecks(cmd.Context(), cmd.OutOrStdout(), checksOf(file, kubeconfig))
		},
	}
	f := cmd.Flags()
	f.StringVar(&configFile, "config", "", "configuration file to check (required)")
	f.StringVar(&kubeconfig, "kubeconfig", "", "management cluster kubeconfig, for management_clusters entries without kubeconfig_file (default: $KUBECONFIG, ~/.kube/config)")
	_ = cmd.MarkFlagRequired("config")
	return cmd
}

// check is one remote: what it is, and how to reach it; run returns what it found, or
// skip the reason it was not checked.
type check struct {
	name string
	run  func(ctx context.Context) (found string, err error)
	skip string
}

// runChecks runs the checks one after the other, printing a line each.
func runChecks(ctx context.Context, w io.Writer, checks []check) error {
	failed := 0
	for _, c := range checks {
		if c.skip != "" {
			fmt.Fprintf(w, "- %s: %s\n", c.name, c.skip)
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, checkTimeout)
		found, err := c.run(cctx)
		cancel()
		if err != nil {
			failed++
			fmt.Fprintf(w, "✗ %s: %v\n", c.name, err)
			continue
		}
		fmt.Fprintf(w, "✔ %s: %s\n", c.name, found)
	}
	if failed > 0 {
		return fmt.Errorf("%w: %d of %d checks failed", errChecksFailed, failed, len(checks))
	}
	return nil
}

// checksOf are the remotes file names.
func checksOf(file *config.File, kubeconfig string) []check {
	checks := []check{{name: "git " + file.Git.URL, run: func(ctx context.Context) (string, error) { return checkGit(ctx, file) }}}
	if file.Git.URL == "" {
		checks[0] = check{name: "git", skip: "no git.url"}
	}
	os := file.OpenStack
	if os.Cloud != "" || os.CloudsFile != "" || envSet("OS_CLOUD") || envSet("OS_AUTH_URL") {
		checks = append(checks, check{name: "keystone", run: func(ctx context.Context) (string, error) {
			cloud, err := connectOpenStack(ctx, &os)
			if err != nil {
				return "", err
			}
			url, region, err := cloud.IdentityEndpoint()
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("a token from %s (region %s)", url, cmp.Or(region, "any")), nil
		}})
	} else {
		checks = append(checks, check{name: "keystone", skip: "no cloud named (openstack.cloud, clouds_file, OS_CLOUD or OS_AUTH_URL)"})
	}
	entries := file.ManagementClusters
	if len(entries) == 0 {
		checks = append(checks, managementCheck("management cluster", kubeconfig))
	}
	for _, e := range entries {
		checks = append(checks, managementCheck("management cluster "+e.Name, cmp.Or(e.KubeconfigFile, kubeconfig)))
	}
	if r := file.Git.Review; r.Gitea != nil || r.GitHub != nil {
		checks = append(checks, check{name: "forge", run: func(ctx context.Context) (string, error) {
			f, err := r.OpenForge(nil)
			if err != nil {
				return "", err
			}
			if err := f.Client.Check(ctx); err != nil {
				return "", err
			}
			return f.Kind + ": the token reads the repository and may push to it", nil
		}})
	}
	return checks
}

func envSet(key string) bool { return os.Getenv(key) != "" }

// checkGit fetches the branch's newest commit, with the configuration's credentials, into
// memory.
func checkGit(ctx context.Context, file *config.File) (string, error) {
	opts, err := file.Git.Options(nil)
	if err != nil {
		return "", err
	}
	opts.CacheDir = ""
	opts.History = gitrepo.History{Commits: 1}
	repo, err := gitrepo.Open(ctx, opts)
	if err != nil {
		return "", err
	}
	head, err := repo.Head()
	if err != nil {
		return "", err
	}
	if head.IsZero() {
		return fmt.Sprintf("reachable; branch %s does not exist yet (the first commit makes it)", opts.Branch), nil
	}
	return fmt.Sprintf("branch %s at %s", opts.Branch, head.String()[:12]), nil
}

// managementCheck reaches a management cluster's API server and asks whether it serves
// Flux's Kustomization API, which applies the repository.
func managementCheck(name, kubeconfig string) check {
	return check{name: name, run: func(ctx context.Context) (string, error) {
		cfg, err := kube.RESTConfig(kubeconfig)
		if err != nil {
			return "", err
		}
		cfg.Timeout = checkTimeout
		dc, err := discovery.NewDiscoveryClientForConfig(cfg)
		if err != nil {
			return "", err
		}
		v, err := dc.ServerVersion()
		if err != nil {
			return "", fmt.Errorf("%s: %w", cfg.Host, err)
		}
		if _, err := dc.ServerResourcesForGroupVersion("kustomize.toolkit.fluxcd.io/v1"); err != nil {
			return "", fmt.Errorf("%s (Kubernetes %s) does not serve Flux's kustomize.toolkit.fluxcd.io/v1: %w", cfg.Host, v.GitVersion, err)
		}
		return fmt.Sprintf("%s, Kubernetes %s, Flux's kustomize.toolkit.fluxcd.io/v1 served", cfg.Host, v.GitVersion), nil
	}}
}
