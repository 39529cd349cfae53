package config

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
)

// Relative paths in the --config file are relative to the file's own directory, as in a
// kubeconfig: a configuration and the files it names (tokens, keys, CA bundles) move
// together, and what the file means does not depend on the directory the process was
// started in. Paths given as command-line flags are not in the file and stay relative to
// the working directory.

// resolveConfigPaths makes every relative filesystem path c holds relative to dir (the
// configuration file's directory). Absolute paths and empty values are left as they are,
// so resolving twice changes nothing once dir is absolute.
func resolveConfigPaths(c *File, dir string) {
	eachConfigPath(c, func(_, p string) string { return inDir(dir, p) })
}

// keepFilePaths copies into c the paths own holds, by key: own is the file alone decoded
// (and resolved) over the defaults, c the same file decoded over magnum.conf. The file's
// own paths win, resolved; those only magnum.conf sets stay as Magnum reads them.
func keepFilePaths(c, own *File) {
	set := map[string]string{}
	eachConfigPath(own, func(key, p string) string {
		if p != "" {
			set[key] = p
		}
		return p
	})
	eachConfigPath(c, func(key, p string) string {
		if v, ok := set[key]; ok {
			return v
		}
		return p
	})
}

// inDir is p relative to dir, unless p is empty or absolute.
func inDir(dir, p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}

// isLocalRemote reports whether url names a repository by its filesystem path, as git
// reads a remote: not a URL with a scheme (file:// ones are absolute by definition) and
// not the scp-like user@host:path. Such a path is a file the configuration names, so it is
// resolved like the others; every other remote is left as written.
func isLocalRemote(url string) bool {
	if url == "" || strings.Contains(url, "://") {
		return false
	}
	ep, err := transport.NewEndpoint(url)
	return err == nil && ep.Protocol == "file"
}

// configDir is the directory relative paths in the configuration file at path are
// relative to: absolute, so that a resolved path reads the same wherever it is used.
func configDir(path string) string {
	dir := filepath.Dir(path)
	if abs, err := filepath.Abs(dir); err == nil {
		return abs
	}
	return dir // the working directory is gone: relative to it is all that is left
}

// eachConfigPath calls fn with the key and value of every filesystem path c holds, and
// stores what fn returns. Every field that names a file or directory must be listed here:
// TestEveryConfigPathIsResolved fails for a *_file, *_files or *_dir key that is not.
func eachConfigPath(c *File, fn func(key, p string) string) {
	one := func(key string, p *string) { *p = fn(key, *p) }
	one("magnum_conf", &c.MagnumConf)

	m := &c.Magnum
	one("magnum.capi_helm.kubeconfig_file", &m.CapiHelm.KubeconfigFile)
	one("magnum.drivers.openstack_ca_file", &m.Drivers.OpenstackCAFile)

	for i := range c.ManagementClusters {
		one(fmt.Sprintf("management_clusters[%d].kubeconfig_file", i), &c.ManagementClusters[i].KubeconfigFile)
	}

	r := &c.Registries
	for name, p := range r.TrustedCAFiles {
		r.TrustedCAFiles[name] = fn("registries.trusted_ca_files."+name, p)
	}
	for reg, a := range r.Auth {
		a.PasswordFile = fn("registries.auth."+reg+".password_file", a.PasswordFile)
		r.Auth[reg] = a
	}

	g := &c.Git
	if isLocalRemote(g.URL) {
		one("git.url", &g.URL)
	}
	one("git.cache_dir", &g.CacheDir)
	one("git.auth.password_file", &g.Auth.PasswordFile)
	one("git.auth.token_file", &g.Auth.TokenFile)
	one("git.auth.ssh_key_file", &g.Auth.SSHKeyFile)
	one("git.auth.known_hosts_file", &g.Auth.KnownHostsFile)
	one("git.signing_key_file", &g.SigningKeyFile)
	if gh := g.Review.GitHub; gh != nil {
		one("git.review.github.token_file", &gh.TokenFile)
		one("git.review.github.webhook_secret_file", &gh.WebhookSecretFile)
	}
	if gt := g.Review.Gitea; gt != nil {
		one("git.review.gitea.token_file", &gt.TokenFile)
		one("git.review.gitea.webhook_secret_file", &gt.WebhookSecretFile)
	}

	one("sops.age_recipients_file", &c.Sops.AgeRecipientsFile)
	one("sops.digest_key_file", &c.Sops.DigestKeyFile)
	one("sops.age_identity_file", &c.Sops.AgeIdentityFile)

	s := &c.Serve
	for i := range s.TokenFiles {
		one(fmt.Sprintf("serve.token_files[%d]", i), &s.TokenFiles[i])
	}
	one("serve.tls.cert_file", &s.TLS.CertFile)
	one("serve.tls.key_file", &s.TLS.KeyFile)
	one("serve.tls.client_ca_file", &s.TLS.ClientCAFile)

	one("openstack.clouds_file", &c.OpenStack.CloudsFile)
	one("openstack.ca_file", &c.OpenStack.CAFile)
}
