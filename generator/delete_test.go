package generator_test

import (
	"path"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
)

// TestDeletePhases: delete_cluster removes the HelmRelease and keeps the Secrets; the
// second phase removes the Secret files and keeps an empty kustomization.yaml, which a
// delete_cluster that comes again keeps as well, so the unfinished delete stays in Git.
func TestDeletePhases(t *testing.T) {
	t.Parallel()
	cfg := defaultConfig()
	res := fixtureResult(t, "08-prod-a-delete.yaml")
	dir := generator.ClusterDir(res.Root, res.Namespace, res.ReleaseName)
	k := path.Join(dir, generator.KustomizationFile)
	secrets := []string{"secret-ca.sops.yaml", "secret-cloud-credentials.sops.yaml", "secret-etcd.sops.yaml", "secret-proxy.sops.yaml", "secret-sa.sops.yaml"}
	empty := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nmetadata:\n  annotations:\n    magnum-gitops.io/delete-phase: secrets-removed\n  name: " + res.ReleaseName + "\n"

	for _, tc := range []struct {
		name     string
		existing []string
		// want: the kustomization's content ("" when it is removed), and whether the
		// directory's files stay.
		kustomization string
	}{
		{"first phase", append([]string{"helmrelease.yaml", "kustomization.yaml", "magnum-cluster.yaml"}, secrets...),
			"apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- secret-ca.sops.yaml\n- secret-cloud-credentials.sops.yaml\n- secret-etcd.sops.yaml\n- secret-proxy.sops.yaml\n- secret-sa.sops.yaml\n"},
		{"second phase begun", []string{"kustomization.yaml", "magnum-cluster.yaml"}, empty},
		{"no Secrets ever", []string{"helmrelease.yaml", "kustomization.yaml", "magnum-cluster.yaml"}, ""},
		{"nothing there", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fs, err := res.Files(cfg, generator.FileOptions{Existing: tc.existing})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(fs.Deletes, path.Join(dir, generator.HelmReleaseFile)) {
				t.Errorf("the HelmRelease is not removed: %v", fs.Deletes)
			}
			got, written := fs.Files[k]
			switch {
			case tc.kustomization == "" && (written || !slices.Contains(fs.Deletes, k)):
				t.Errorf("want the directory removed; files %v, deletes %v", fs.Files, fs.Deletes)
			case tc.kustomization != "" && string(got) != tc.kustomization:
				t.Errorf("kustomization.yaml:\n%s\nwant:\n%s", got, tc.kustomization)
			case tc.kustomization != "" && slices.Contains(fs.Deletes, k):
				t.Errorf("kustomization.yaml both written and removed")
			}
		})
	}

	fs, removed, err := generator.SecretsRemoved(res.Root, res.Namespace, res.ReleaseName, append([]string{"kustomization.yaml", "magnum-cluster.yaml"}, secrets...))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(removed, secrets) {
		t.Errorf("removed %v, want %v", removed, secrets)
	}
	var wantDeletes []string
	for _, s := range secrets {
		wantDeletes = append(wantDeletes, path.Join(dir, s))
	}
	if !slices.Equal(fs.Deletes, wantDeletes) || len(fs.Files) != 1 || string(fs.Files[k]) != empty {
		t.Errorf("second phase: files %q, deletes %v", fs.Files, fs.Deletes)
	}

	// kustomize builds the directory in both phases (Flux's kustomize-controller would stop
	// applying every cluster otherwise); the second yields nothing.
	first, err := res.Files(cfg, generator.FileOptions{Existing: append([]string{"helmrelease.yaml", "kustomization.yaml"}, secrets...)})
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{k: string(first.Files[k])}
	for _, s := range secrets {
		files[path.Join(dir, s)] = "apiVersion: v1\nkind: Secret\nmetadata: {name: " + strings.TrimSuffix(strings.TrimPrefix(s, "secret-"), ".sops.yaml") + "}\n"
	}
	if got := kustomizeBuild(t, dir, files); strings.Count(got, "kind: Secret") != len(secrets) {
		t.Errorf("first phase builds:\n%s", got)
	}
	if got := kustomizeBuild(t, dir, map[string]string{k: string(fs.Files[k])}); strings.TrimSpace(got) != "" {
		t.Errorf("second phase builds:\n%s", got)
	}
}

// kustomizeBuild builds dir with kustomize, as kustomize-controller does.
func kustomizeBuild(t *testing.T, dir string, files map[string]string) string {
	t.Helper()
	fsys := filesys.MakeFsInMemory()
	for p, c := range files {
		if err := fsys.WriteFile("/"+p, []byte(c)); err != nil {
			t.Fatal(err)
		}
	}
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fsys, "/"+dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	out, err := m.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// TestSecretSuffixes: every Secret the fixtures render is named with one of
// SecretSuffixes, which a delete falls back on.
func TestSecretSuffixes(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	check := func(name string, res *generator.Result) {
		for _, s := range res.Objects.Secrets {
			suffix, ok := strings.CutPrefix(s.Name, res.ReleaseName+"-")
			if !ok || !slices.Contains(generator.SecretSuffixes, suffix) {
				t.Errorf("%s: Secret %s is not R-<one of %v>", name, s.Name, generator.SecretSuffixes)
			}
			seen[suffix] = true
		}
	}
	for _, name := range fixtureNames(t) {
		res, err := render(fixtureEvent(t, name), defaultConfig())
		if err != nil {
			continue // the bad-input fixtures
		}
		check(name, res)
	}
	res, err := render(featureEvent(t, "registries"), testenv.RegistriesConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	check("registries", res)
	for _, s := range generator.SecretSuffixes {
		if !seen[s] {
			t.Errorf("no fixture renders the Secret R-%s: is the suffix still used?", s)
		}
	}
}

// TestDeletePhaseOf: the phase of a directory is read from its files alone.
func TestDeletePhaseOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		existing []string
		deploy   string
		want     generator.DeletePhase
	}{
		{"deployed", []string{"helmrelease.yaml", "kustomization.yaml", "magnum-cluster.yaml", "secret-ca.sops.yaml"}, generator.HelmReleaseFile, generator.DeleteNotStarted},
		{"deployed by Argo CD", []string{"application.yaml", "kustomization.yaml"}, generator.ApplicationFile, generator.DeleteNotStarted},
		{"the HelmRelease left, the Secrets stay", []string{"kustomization.yaml", "magnum-cluster.yaml", "secret-ca.sops.yaml", "secret-sa.yaml"}, generator.HelmReleaseFile, generator.DeleteAwaitingCluster},
		{"the Secrets left", []string{"kustomization.yaml", "magnum-cluster.yaml"}, generator.HelmReleaseFile, generator.DeleteSecretsRemoved},
		{"only the record is left", []string{"magnum-cluster.yaml"}, generator.HelmReleaseFile, generator.DeleteSecretsRemoved},
		{"a HelmRelease file under Argo CD is not its deploy file", []string{"helmrelease.yaml", "kustomization.yaml"}, generator.ApplicationFile, generator.DeleteSecretsRemoved},
		{"gone", nil, generator.HelmReleaseFile, generator.DeleteDone},
	} {
		if got := generator.DeletePhaseOf(tc.existing, tc.deploy); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}
