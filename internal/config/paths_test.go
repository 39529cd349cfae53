package config

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/generator"
)

// TestResolveConfigPaths: a relative path becomes relative to the configuration's
// directory; an absolute or empty one is left alone, and so is every value that is not a
// filesystem path (flux.path is a path in Git, git.url here a URL: TestResolveGitURL).
func TestResolveConfigPaths(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "etc", "magnum-gitops")
	tests := []struct {
		name, in, want string
	}{
		{"relative", "secrets/git-token", filepath.Join(dir, "secrets/git-token")},
		{"dot", "./git-token", filepath.Join(dir, "git-token")},
		{"parent", "../shared/git-token", filepath.Join(filepath.Dir(dir), "shared/git-token")},
		{"absolute", "/run/secrets/git-token", "/run/secrets/git-token"},
		{"empty stays empty", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := File{Config: generator.DefaultConfig(), MagnumConf: tc.in}
			c.Git.URL, c.Git.Auth.TokenFile = "https://git.example.org/c.git", tc.in
			c.Serve.TokenFiles = []string{tc.in, "/abs/token"}
			c.Serve.Kustomization = "flux-system/magnum-clusters"
			c.Registries.TrustedCAFiles = map[string]string{"site": tc.in}
			c.Registries.Auth = map[string]generator.RegistryAuth{"registry.example.org": {Username: "u", PasswordFile: tc.in}}
			c.Git.Review.GitHub = &Forge{Owner: "cloud", Repo: "clusters", TokenFile: tc.in}
			resolveConfigPaths(&c, dir)
			for key, got := range map[string]string{
				"magnum_conf": c.MagnumConf, "git.auth.token_file": c.Git.Auth.TokenFile,
				"serve.token_files[0]": c.Serve.TokenFiles[0], "registries.trusted_ca_files.site": c.Registries.TrustedCAFiles["site"],
				"registries.auth.registry.example.org.password_file": c.Registries.Auth["registry.example.org"].PasswordFile,
				"git.review.github.token_file":                       c.Git.Review.GitHub.TokenFile,
			} {
				if got != tc.want {
					t.Errorf("%s = %q, want %q", key, got, tc.want)
				}
			}
			if c.Serve.TokenFiles[1] != "/abs/token" || c.Flux.Path != "clusters/magnum" || c.Git.URL != "https://git.example.org/c.git" ||
				c.Serve.Kustomization != "flux-system/magnum-clusters" || c.Registries.Auth["registry.example.org"].Username != "u" {
				t.Errorf("a value that is not a relative path changed: %q %q %q %q %+v", c.Serve.TokenFiles[1], c.Flux.Path,
					c.Git.URL, c.Serve.Kustomization, c.Registries.Auth)
			}
			// Resolving again changes nothing: the paths are absolute now.
			before := c.Git.Auth.TokenFile
			resolveConfigPaths(&c, dir)
			if c.Git.Auth.TokenFile != before {
				t.Errorf("resolved twice: %q, then %q", before, c.Git.Auth.TokenFile)
			}
		})
	}
}

// TestResolveGitURL: git.url is resolved only when git would read it as a path on disk;
// URLs, file:// included, and scp-like remotes are left as written.
func TestResolveGitURL(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "etc")
	tests := []struct{ in, want string }{
		{"clusters.git", filepath.Join(dir, "clusters.git")},
		{"./git/clusters.git", filepath.Join(dir, "git/clusters.git")},
		{"../srv/clusters.git", filepath.Join(filepath.Dir(dir), "srv/clusters.git")},
		{"/srv/git/clusters.git", "/srv/git/clusters.git"},
		{"file:///srv/git/clusters.git", "file:///srv/git/clusters.git"},
		{"https://git.example.org/cloud/clusters.git", "https://git.example.org/cloud/clusters.git"},
		{"ssh://git@git.example.org:2222/cloud/clusters.git", "ssh://git@git.example.org:2222/cloud/clusters.git"},
		{"git@git.example.org:cloud/clusters.git", "git@git.example.org:cloud/clusters.git"},
		{"git.example.org:cloud/clusters.git", "git.example.org:cloud/clusters.git"},
		{"", ""},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			var c File
			c.Git.URL = tc.in
			resolveConfigPaths(&c, dir)
			if c.Git.URL != tc.want {
				t.Errorf("git.url %q resolved to %q, want %q", tc.in, c.Git.URL, tc.want)
			}
		})
	}
}

// TestEveryConfigPathIsResolved walks the configuration's types: every string, []string or
// map[string]string field whose key ends in _file, _files or _dir, or is magnum_conf, is
// given a relative value and must come out of resolveConfigPaths under the directory. A
// path-like key added to a section without a line in eachConfigPath fails here.
func TestEveryConfigPathIsResolved(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "conf")
	rel := func(key string) string { return filepath.Join("rel", key) }
	var c File
	var keys []string
	walkPathFields(reflect.ValueOf(&c).Elem(), "", func(key string, f reflect.Value) {
		keys = append(keys, key)
		switch {
		case f.Kind() == reflect.String:
			f.SetString(rel(key))
		case f.Type() == reflect.TypeFor[[]string]():
			f.Set(reflect.ValueOf([]string{rel(key)}))
		case f.Type() == reflect.TypeFor[map[string]string]():
			f.Set(reflect.ValueOf(map[string]string{"x": rel(key)}))
		default:
			t.Errorf("%s is a %s: teach eachConfigPath and this test that kind of path", key, f.Type())
		}
	})
	// The walk must reach every section, or it proves nothing.
	for _, want := range []string{"magnum_conf", "magnum.drivers.openstack_ca_file", "registries.trusted_ca_files",
		"registries.auth.x.password_file", "git.cache_dir", "git.review.gitea.token_file", "sops.age_identity_file",
		"serve.token_files", "serve.tls.client_ca_file", "openstack.ca_file"} {
		if !slices.Contains(keys, want) {
			t.Errorf("the walk did not reach %s (reached %v)", want, keys)
		}
	}

	resolveConfigPaths(&c, dir)

	walkPathFields(reflect.ValueOf(&c).Elem(), "", func(key string, f reflect.Value) {
		want := filepath.Join(dir, rel(key))
		var got []string
		switch {
		case f.Kind() == reflect.String:
			got = []string{f.String()}
		case f.Kind() == reflect.Slice:
			got = f.Interface().([]string)
		case f.Kind() == reflect.Map:
			for _, v := range f.Interface().(map[string]string) {
				got = append(got, v)
			}
		}
		if len(got) != 1 || got[0] != want {
			t.Errorf("%s = %q after resolving, want [%s]: add it to eachConfigPath", key, got, want)
		}
	})
}

// walkPathFields calls fn with every path-like field under v (addressable), by its dotted
// key. Nil pointers to structs are allocated and maps of structs get an entry "x", so
// that every field is reached.
func walkPathFields(v reflect.Value, key string, fn func(key string, f reflect.Value)) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.Type().Elem().Kind() != reflect.Struct {
			return
		}
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		walkPathFields(v.Elem(), key, fn)
	case reflect.Map:
		if v.Type().Key().Kind() != reflect.String || v.Type().Elem().Kind() != reflect.Struct {
			return
		}
		if v.Len() == 0 {
			v.Set(reflect.MakeMap(v.Type()))
			v.SetMapIndex(reflect.ValueOf("x").Convert(v.Type().Key()), reflect.New(v.Type().Elem()).Elem())
		}
		for _, k := range v.MapKeys() {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(k))
			walkPathFields(e, key+"."+k.String(), fn)
			v.SetMapIndex(k, e)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			k := key
			if name != "" {
				k = strings.TrimPrefix(key+"."+name, ".")
			}
			if name == "magnum_conf" || strings.HasSuffix(name, "_file") || strings.HasSuffix(name, "_files") || strings.HasSuffix(name, "_dir") {
				fn(k, v.Field(i))
				continue
			}
			walkPathFields(v.Field(i), k, fn)
		}
	}
}

// TestLoadConfigRelativePaths: Load resolves the file's relative paths against the
// file's directory, whatever the working directory and however the file itself is named
// (here by a path relative to the working directory). magnum_conf is read from there; the
// paths magnum.conf sets itself stay as Magnum reads them, unless the file sets them too.
func TestLoadRelativePaths(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("conf/magnum.conf", "[capi_helm]\nnamespace_prefix = mgmt\nkubeconfig_file = kubeconfig\n[drivers]\nopenstack_ca_file = magnum-ca.pem\n")
	const base = "magnum_conf: magnum.conf\n" +
		"sops: {age_recipients: [age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p], digest_key_file: secrets/digest.key}\n" +
		"git: {url: https://git.example.org/c.git, cache_dir: cache, auth: {token_file: ./secrets/git-token}}\n" +
		"serve: {token_files: [secrets/api-token, /run/api-token]}\n" +
		"openstack: {clouds_file: ../clouds.yaml}\n"
	tests := []struct {
		name, doc string
		caFile    string // magnum.drivers.openstack_ca_file
	}{
		{"magnum.conf's own path is Magnum's", base, "magnum-ca.pem"},
		{"the file's path wins, resolved", base + "magnum: {drivers: {openstack_ca_file: site-ca.pem}}\n", filepath.Join(dir, "conf", "site-ca.pem")},
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for i, tc := range tests {
		name := filepath.Join("conf", string(rune('a'+i))+".yaml")
		write(name, tc.doc)
		relPath, err := filepath.Rel(wd, filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Load(relPath)
			if err != nil {
				t.Fatal(err)
			}
			conf := filepath.Join(dir, "conf")
			for key, got := range map[string][2]string{
				"magnum_conf":                      {cfg.MagnumConf, filepath.Join(conf, "magnum.conf")},
				"git.cache_dir":                    {cfg.Git.CacheDir, filepath.Join(conf, "cache")},
				"sops.digest_key_file":             {cfg.Sops.DigestKeyFile, filepath.Join(conf, "secrets/digest.key")},
				"git.auth.token_file":              {cfg.Git.Auth.TokenFile, filepath.Join(conf, "secrets/git-token")},
				"serve.token_files[0]":             {cfg.Serve.TokenFiles[0], filepath.Join(conf, "secrets/api-token")},
				"serve.token_files[1]":             {cfg.Serve.TokenFiles[1], "/run/api-token"},
				"openstack.clouds_file":            {cfg.OpenStack.CloudsFile, filepath.Join(dir, "clouds.yaml")},
				"magnum.drivers.openstack_ca_file": {cfg.Magnum.Drivers.OpenstackCAFile, tc.caFile},
				"magnum.capi_helm.kubeconfig_file": {cfg.Magnum.CapiHelm.KubeconfigFile, "kubeconfig"},
			} {
				if got[0] != got[1] {
					t.Errorf("%s = %q, want %q", key, got[0], got[1])
				}
			}
			if cfg.Magnum.CapiHelm.NamespacePrefix != "mgmt" {
				t.Errorf("magnum.conf not read: namespace_prefix %q", cfg.Magnum.CapiHelm.NamespacePrefix)
			}
		})
	}
}
