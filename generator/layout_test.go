package generator_test

import (
	"path"
	"strings"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/generator"
)

// perNamespace is the default configuration with the per-namespace layout.
func perNamespace() *generator.Config {
	cfg := defaultConfig()
	cfg.Flux.Layout = generator.LayoutPerNamespace
	cfg.Flux.Git.URL = "https://git.example.org/cloud/magnum-clusters.git"
	cfg.Flux.Git.SecretRef = "magnum-clusters-git"
	return cfg
}

// TestLayoutPerNamespace checks the files of the per-namespace layouts against their
// golden files, and that they add to, never change, the single layout's files.
func TestLayoutPerNamespace(t *testing.T) {
	t.Parallel()
	for _, layout := range []string{generator.LayoutPerNamespace, generator.LayoutBranchPerNamespace} {
		t.Run(layout, func(t *testing.T) {
			t.Parallel()
			cfg := perNamespace()
			cfg.Flux.Layout = layout
			checkLayout(t, cfg, "layout/"+layout+".yaml")
		})
		// Argo mode: a parent Application per namespace, fetching argo.repo_url (the
		// namespace's published branch in branch-per-namespace), not flux.git.
		t.Run("argo/"+layout, func(t *testing.T) {
			t.Parallel()
			cfg := argoConfig(t, "")
			cfg.Flux.Layout = layout
			checkLayout(t, cfg, "layout/argo-"+layout+".yaml")
		})
	}
}

func checkLayout(t *testing.T, cfg *generator.Config, golden string) {
	ev := fixtureEvent(t, "01-prod-a-create.yaml")
	singleCfg := *cfg
	singleCfg.Flux.Layout = generator.LayoutSingle
	single, err := render(ev, &singleCfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := render(ev, cfg)
	if err != nil {
		t.Fatal(err)
	}
	sfs, err := single.Files(&singleCfg, generator.FileOptions{Secrets: redactedSecrets})
	if err != nil {
		t.Fatal(err)
	}
	fs, err := res.Files(cfg, generator.FileOptions{Secrets: redactedSecrets})
	if err != nil {
		t.Fatal(err)
	}
	layout := &generator.FileSet{Files: map[string][]byte{}}
	for p, b := range fs.Files {
		if s, ok := sfs.Files[p]; ok {
			if string(s) != string(b) {
				t.Errorf("%s differs between the layouts", p)
			}
			continue
		}
		layout.Files[p] = b
	}
	for p := range sfs.Files {
		if _, ok := fs.Files[p]; !ok {
			t.Errorf("%s is missing from the %s layout", p, cfg.Flux.Layout)
		}
	}
	dir := path.Join(cfg.Flux.Path, generator.FluxDir)
	want := []string{dir + "/gitrepository-" + res.Namespace + ".yaml", dir + "/kustomization-" + res.Namespace + ".yaml"}
	if cfg.Format == generator.FormatArgo {
		want = []string{dir + "/application-" + res.Namespace + ".yaml"}
	}
	if got := layout.Paths(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("%s files %v, want %v", cfg.Flux.Layout, got, want)
	}
	checkGolden(t, golden, layout.Stream())

	// A delete keeps the namespace's Flux objects: the namespace is never deleted.
	del := fixtureEvent(t, "08-prod-a-delete.yaml")
	dres, err := render(del, cfg)
	if err != nil {
		t.Fatal(err)
	}
	dfs, err := dres.Files(cfg, generator.FileOptions{Secrets: redactedSecrets, Existing: []string{"secret-ca.yaml"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range dfs.Paths() {
		if strings.HasPrefix(p, dir+"/") {
			t.Errorf("delete_cluster touches %s", p)
		}
	}
}

// TestPublishedPart: in the branch-per-namespace layout each namespace's directory is a
// part of its own, the Flux objects and chart sources of a root one more, and nothing
// else is published.
func TestPublishedPart(t *testing.T) {
	t.Parallel()
	cfg := perNamespace()
	cfg.Flux.Layout = generator.LayoutBranchPerNamespace
	two := perNamespace()
	two.ManagementClusters = []generator.ManagementCluster{{Name: "one", Path: "clusters/one", Default: true}, {Name: "two", Path: "clusters/two", Regions: []string{"RegionTwo"}}}
	for _, tc := range []struct {
		cfg        *generator.Config
		path, part string
		dirs       []string
	}{
		{cfg, "clusters/magnum/magnum-p1/prod-a/helmrelease.yaml", "clusters/magnum/magnum-p1", []string{"clusters/magnum/magnum-p1"}},
		{cfg, "clusters/magnum/magnum-p1/namespace.yaml", "clusters/magnum/magnum-p1", []string{"clusters/magnum/magnum-p1"}},
		{cfg, "clusters/magnum/flux/kustomization-magnum-p1.yaml", "clusters/magnum/flux", []string{"clusters/magnum/flux", "clusters/magnum/sources"}},
		{cfg, "clusters/magnum/sources/helmrepository-azimuth.yaml", "clusters/magnum/flux", []string{"clusters/magnum/flux", "clusters/magnum/sources"}},
		{cfg, ".sops.yaml", "", nil},
		{cfg, "clusters/magnum/README.md", "", nil},
		{cfg, "clusters/magnumx/p/a.yaml", "", nil},
		{two, "clusters/two/magnum-p1/prod-a/helmrelease.yaml", "clusters/two/magnum-p1", []string{"clusters/two/magnum-p1"}},
		{two, "clusters/one/sources/helmrepository-azimuth.yaml", "clusters/one/flux", []string{"clusters/one/flux", "clusters/one/sources"}},
		{two, "clusters/magnum/magnum-p1/prod-a/helmrelease.yaml", "", nil},
	} {
		part := tc.cfg.PublishedPart(tc.path)
		if part != tc.part {
			t.Errorf("PublishedPart(%s) = %q, want %q", tc.path, part, tc.part)
			continue
		}
		if part == "" {
			continue
		}
		if dirs := tc.cfg.PublishedDirs(part); strings.Join(dirs, " ") != strings.Join(tc.dirs, " ") {
			t.Errorf("PublishedDirs(%s) = %v, want %v", part, dirs, tc.dirs)
		}
		if b := generator.PublishedBranch(part); b != "magnum-gitops/"+part {
			t.Errorf("PublishedBranch(%s) = %s", part, b)
		}
	}
}

// TestLayoutBadConfig checks that every wrong layout option is named.
func TestLayoutBadConfig(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		mutate func(*generator.Config)
		field  string
		rule   string
	}{
		{"unknown layout", func(c *generator.Config) { c.Flux.Layout = "per-cluster" }, "flux.layout", "must be single, per-namespace or branch-per-namespace"},
		{"argo without its repository", func(c *generator.Config) { c.Format = generator.FormatArgo; c.Argo.RepoURL = "" }, "argo.repo_url", "must be set with flux.layout per-namespace"},
		{"no url", func(c *generator.Config) { c.Flux.Git.URL = "" }, "flux.git.url", "as source-controller fetches it"},
		{"token in url", func(c *generator.Config) { c.Flux.Git.URL = "https://x:NOT-REAL-token@git.example.org/r.git" }, "flux.git.url", "must not carry a user, password"},
		{"token as the user", func(c *generator.Config) { c.Flux.Git.URL = "https://NOT-REAL-token@git.example.org/r.git" }, "flux.git.url", "must not carry a user"},
		{"file url", func(c *generator.Config) { c.Flux.Git.URL = "file:///srv/git" }, "flux.git.url", "as source-controller fetches it"},
		{"no branch", func(c *generator.Config) { c.Flux.Git.Branch = "" }, "flux.git.branch", "must be a branch name"},
		{"bad branch", func(c *generator.Config) { c.Flux.Git.Branch = "ma in" }, "flux.git.branch", "must be a branch name"},
		{"bad secret", func(c *generator.Config) { c.Flux.Git.SecretRef = "Git_Token" }, "flux.git.secret_ref", "must be a Secret name"},
		{"no decryption secret", func(c *generator.Config) { c.Flux.DecryptionSecret = "" }, "flux.decryption_secret", "must be a Secret name"},
		{"unclean path", func(c *generator.Config) { c.Flux.Path = "clusters//magnum/" }, "flux.path", "clean path"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := perNamespace()
			tc.mutate(cfg)
			res, err := render(fixtureEvent(t, "01-prod-a-create.yaml"), cfg)
			if err == nil {
				t.Fatalf("rendered %v, want an error on %s", res.ReleaseName, tc.field)
			}
			assertFieldError(t, err, tc.field, tc.rule)
			if strings.Contains(err.Error(), "NOT-REAL") {
				t.Errorf("the error quotes the URL's token: %v", err)
			}
		})
	}
	// The single layout ignores the per-namespace options, and so does Argo mode.
	cfg := defaultConfig()
	cfg.Flux.Git.Branch = ""
	if _, err := render(fixtureEvent(t, "01-prod-a-create.yaml"), cfg); err != nil {
		t.Errorf("single layout: %v", err)
	}
	cfg = argoConfig(t, "")
	cfg.Flux.Layout = generator.LayoutPerNamespace
	cfg.Flux.Git.URL = ""
	if _, err := render(fixtureEvent(t, "01-prod-a-create.yaml"), cfg); err != nil {
		t.Errorf("argo per-namespace layout without flux.git: %v", err)
	}
}
