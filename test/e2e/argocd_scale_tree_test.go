//go:build e2e

package e2e

// The trees TestE2EArgoScale pushes: rendered once per format, the sops plugin timed over
// them, and the shapes it compares (namespace parents, values as an object).

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"filippo.io/age"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv/argocd"
)

// renderFormatTrees renders n clusters, spread over projects namespaces, once in each
// format, with `magnum-gitops render --out-dir` (SOPS for id), into a tree per format
// (the layout's path under it), with the chart repository's and the Git server's URLs as
// placeholders (copySeedTree replaces them). The same events in both formats: the same
// clusters, names and values.
func renderFormatTrees(t *testing.T, b *binaries, id *age.X25519Identity, n, projects int, formats []string, argoLayout string) map[string]string {
	t.Helper()
	dir := t.TempDir()
	digest := filepath.Join(dir, "digest.key")
	if err := os.WriteFile(digest, []byte(randomToken()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := readEvent(t, filepath.Join(testenv.RepoRoot(), "fixtures", "events", "01-prod-a-create.yaml"))
	trees := map[string]string{}
	for _, format := range formats {
		cfg := map[string]any{
			"magnum": map[string]any{"capi_helm": map[string]any{"helm_chart_repo": chartURLPlaceholder,
				"default_helm_chart_version": "0.27.0"}},
			"management_cluster": map[string]any{"capo_api_versions": []string{"v1beta1"}},
			"flux":               map[string]any{"path": fluxPath},
			"sops":               map[string]any{"age_recipients": []string{id.Recipient().String()}, "digest_key_file": digest},
		}
		if format == generator.FormatArgo {
			// argo.repo_url defaults to git.url; a cluster without chart patches does not
			// use it (its Application's source is the chart repository).
			cfg["format"] = generator.FormatArgo
			cfg["git"] = map[string]any{"url": gitURLPlaceholder, "branch": "main"}
			cfg["flux"].(map[string]any)["layout"] = argoLayout
		}
		data, err := yaml.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		config := filepath.Join(dir, format+".yaml")
		if err := os.WriteFile(config, data, 0o600); err != nil {
			t.Fatal(err)
		}
		// Two workers (2 cores), each rendering whole namespaces into its own tree.
		const workers = 2
		var wg sync.WaitGroup
		errs := make([]error, workers)
		for w := range workers {
			wg.Go(func() {
				out := filepath.Join(dir, format, fmt.Sprintf("tree-%d", w))
				for i := range n {
					p := i % projects
					if p%workers != w {
						continue
					}
					ev := deepCopy(base).(map[string]any)
					project := fmt.Sprintf("%032x", p+1)
					ev["id"] = fmt.Sprintf("evt-argo-scale-%d", i)
					setPath(ev, project, "context", "project_id")
					setPath(ev, project, "cluster", "project_id")
					setPath(ev, fmt.Sprintf("%08x-0000-4000-8000-%012x", i+1, i+1), "cluster", "uuid")
					setPath(ev, fmt.Sprintf("c%05d", i), "cluster", "name")
					setPath(ev, fmt.Sprintf("c%05d-%012x", i, i+1), "cluster", "stack_id")
					data, err := yaml.Marshal(ev)
					if err != nil {
						errs[w] = err
						return
					}
					cmd := exec.Command(b.magnum, "render", "-f", "-", "--config", config, "--out-dir", out)
					cmd.Stdin = bytes.NewReader(data)
					if o, err := cmd.CombinedOutput(); err != nil {
						errs[w] = fmt.Errorf("render cluster %d in format %s: %v\n%s", i, format, err, o)
						return
					}
				}
			})
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		tree := filepath.Join(dir, format, "tree-0")
		for w := 1; w < workers; w++ {
			other := filepath.Join(dir, format, fmt.Sprintf("tree-%d", w), fluxPath)
			entries, _ := os.ReadDir(other)
			for _, e := range entries {
				if e.Name() == generator.SourcesDir {
					continue // the same in every tree
				}
				from, to := []string{filepath.Join(other, e.Name())}, filepath.Join(tree, fluxPath)
				if e.Name() == generator.FluxDir {
					// The namespaces' parent Applications: each worker wrote its own.
					from, _ = filepath.Glob(filepath.Join(other, e.Name(), "*"))
					to = filepath.Join(tree, fluxPath, generator.FluxDir)
					if err := os.MkdirAll(to, 0o755); err != nil {
						t.Fatal(err)
					}
				}
				for _, f := range from {
					if err := os.Rename(f, filepath.Join(to, filepath.Base(f))); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		want := map[string]string{generator.FormatArgo: generator.ApplicationFile, generator.FormatFlux: "helmrelease.yaml"}[format]
		if got := countFiles(t, filepath.Join(tree, fluxPath), want); got != n {
			t.Fatalf("format %s: %d %s rendered, want %d", format, got, want, n)
		}
		trees[format] = tree
	}
	return trees
}

// countFiles counts the files named name under dir.
func countFiles(t *testing.T, dir, name string) int {
	t.Helper()
	count := 0
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == name {
			count++
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return count
}

// timeSOPSPlugin runs the sops plugin's generate command (deploy/argocd/sops-plugin.yaml,
// as argocd-cmp-server runs it) once over the Argo tree, with the sops CLI of
// hack/sops.sh and id, and returns its wall and CPU time (its children's included): what
// the parent Application's manifest generation costs the cmp-server on each commit.
func timeSOPSPlugin(t *testing.T, tree string, id *age.X25519Identity) pluginRun {
	t.Helper()
	sopsDir := testenv.BinDir("SOPS_BIN", "sops", argocd.SOPSVersion)
	if _, err := os.Stat(filepath.Join(sopsDir, "sops")); err != nil {
		t.Fatalf("sops %s is missing in %q (SOPS_BIN): run hack/sops.sh", argocd.SOPSVersion, sopsDir)
	}
	file := filepath.Join(testenv.RepoRoot(), "deploy", "argocd", "sops-plugin.yaml")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{}
	if err := yaml.Unmarshal(data, cm); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	var plugin struct {
		Spec struct {
			Generate struct {
				Command []string `json:"command"`
				Args    []string `json:"args"`
			} `json:"generate"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal([]byte(cm.Data["plugin.yaml"]), &plugin); err != nil || len(plugin.Spec.Generate.Command) == 0 {
		t.Fatalf("%s: data.plugin.yaml: no generate command (%v)", file, err)
	}
	argv := append(plugin.Spec.Generate.Command, plugin.Spec.Generate.Args...)
	key := filepath.Join(t.TempDir(), "age.agekey")
	if err := os.WriteFile(key, []byte(id.String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = filepath.Join(tree, fluxPath)
	cmd.Env = append(os.Environ(), "PATH="+sopsDir+string(os.PathListSeparator)+os.Getenv("PATH"), "SOPS_AGE_KEY_FILE="+key)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("the sops plugin's generate command over the tree: %v\n%s", err, stderr.String())
	}
	r := pluginRun{wall: time.Since(start), cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(),
		docs: bytes.Count(out.Bytes(), []byte("\n---\n")) + 1}
	_ = filepath.WalkDir(cmd.Dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(d.Name(), ".sops.yaml") {
			r.files++
		}
		return err
	})
	if bytes.Contains(out.Bytes(), []byte("ENC[")) {
		t.Fatalf("the sops plugin printed an encrypted value: a file was not decrypted")
	}
	t.Logf("the sops plugin's generate command over the whole tree (what the parent Application costs on each commit): %s wall, %s CPU, %d SOPS files decrypted, %d documents",
		r.wall.Round(time.Millisecond), r.cpu.Round(time.Millisecond), r.files, r.docs)
	return r
}

// helmValuesAsObject rewrites every Application of the tree: its spec.source.helm.values
// text becomes the same values in spec.source.helm.valuesObject (valuesObject).
func helmValuesAsObject(t *testing.T, tree string) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(filepath.Join(tree, fluxPath), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.Name() != generator.ApplicationFile {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		app := map[string]any{}
		if err := yaml.Unmarshal(data, &app); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		helm, ok := getPath(app, "spec", "source", "helm").(map[string]any)
		text, _ := helm["values"].(string)
		if !ok || text == "" {
			return fmt.Errorf("%s: no spec.source.helm.values", path)
		}
		var values map[string]any
		if err := yaml.Unmarshal([]byte(text), &values); err != nil {
			return fmt.Errorf("%s: its values: %w", path, err)
		}
		delete(helm, "values")
		helm["valuesObject"] = values
		out, err := yaml.Marshal(app)
		if err != nil {
			return err
		}
		n++
		return os.WriteFile(path, out, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("moved the values of %d Applications from helm.values to helm.valuesObject", n)
}
