package reconciler_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/reconciler"
)

// TestDirSinkRefusesSymlinks: a link planted where a cluster directory (or a file of it)
// goes must not make the sink write or delete outside the output directory.
func TestDirSinkRefusesSymlinks(t *testing.T) {
	t.Parallel()
	cfg := generator.DefaultConfig()
	p := &reconciler.Pipeline{Config: generator.MustSite(cfg), Secrets: reconciler.SecretPolicy{Plaintext: true}}
	ns := "clusters/magnum/magnum-9f3c1b2a4d5e4f6a8b7c6d5e4f3a2b1c"
	for name, plant := range map[string]string{
		"namespace dir": ns,
		"cluster dir":   ns + "/prod-a-2b7xq4mzkd5h",
		"file":          ns + "/prod-a-2b7xq4mzkd5h/helmrelease.yaml",
		"top dir":       "clusters",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			root, outside := t.TempDir(), t.TempDir()
			target := filepath.Join(outside, "target")
			if err := os.MkdirAll(target, 0o755); err != nil {
				t.Fatal(err)
			}
			link := filepath.Join(root, plant)
			if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, link); err != nil {
				t.Fatal(err)
			}
			_, err := (&reconciler.DirSink{Root: root}).Apply(context.Background(), p, event(t, "01-prod-a-create.yaml"))
			if !errors.Is(err, reconciler.ErrSymlink) {
				t.Errorf("err = %v, want ErrSymlink", err)
			}
			if entries, _ := os.ReadDir(target); len(entries) != 0 {
				t.Errorf("wrote through the link: %v", entries)
			}
		})
	}
}

// TestDirSinkAllOrNothing: a second apply of the same event changes nothing, and a delete
// removes the HelmRelease but keeps the Secrets, pruning nothing else.
func TestDirSinkAllOrNothing(t *testing.T) {
	t.Parallel()
	cfg := generator.DefaultConfig()
	p := &reconciler.Pipeline{Config: generator.MustSite(cfg), Secrets: reconciler.SecretPolicy{Plaintext: true}}
	sink := &reconciler.DirSink{Root: t.TempDir()}
	ctx := context.Background()
	if _, err := sink.Apply(ctx, p, event(t, "01-prod-a-create.yaml")); err != nil {
		t.Fatal(err)
	}
	out, err := sink.Apply(ctx, p, event(t, "01-prod-a-create.yaml"))
	if err != nil || !out.Plan.NoOp() {
		t.Fatalf("same event again: %v, changes %v", err, out.Plan.Paths())
	}
	out, err = sink.Apply(ctx, p, event(t, "08-prod-a-delete.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(sink.Root, "clusters/magnum/magnum-9f3c1b2a4d5e4f6a8b7c6d5e4f3a2b1c/prod-a-2b7xq4mzkd5h")
	if _, err := os.Stat(filepath.Join(dir, "helmrelease.yaml")); !os.IsNotExist(err) {
		t.Errorf("helmrelease.yaml still there after delete (%v); changes %v", err, out.Plan.Paths())
	}
	if _, err := os.Stat(filepath.Join(dir, "secret-ca.yaml")); err != nil {
		t.Errorf("the Secrets must stay until the CAPI Cluster is gone: %v", err)
	}
}

// TestNoChartDowngrade: an event that would move a cluster to an older chart than the
// repository holds is refused, an upgrade_cluster included: Helm would roll the CAPI
// objects back to a chart that may not know the fields the newer one set.
func TestNoChartDowngrade(t *testing.T) {
	t.Parallel()
	cfg := generator.DefaultConfig()
	p := &reconciler.Pipeline{Config: generator.MustSite(cfg), Secrets: reconciler.SecretPolicy{Plaintext: true}}
	sink := &reconciler.DirSink{Root: t.TempDir()}
	ctx := context.Background()
	if _, err := sink.Apply(ctx, p, event(t, "01-prod-a-create.yaml")); err != nil { // chart 0.27.0
		t.Fatal(err)
	}
	older := event(t, "02-prod-a-resize-workers.yaml")
	older.ClusterTemplate.Labels["capi_helm_chart_version"] = "0.24.1"
	_, err := sink.Apply(ctx, p, older)
	if reconciler.KindOf(err) != reconciler.KindInvalid || !strings.Contains(fmt.Sprint(err), "older than the 0.27.0") {
		t.Fatalf("resize onto an older chart: %v, want a refusal", err)
	}
	older.Operation = "upgrade_cluster"
	if _, err := sink.Apply(ctx, p, older); reconciler.KindOf(err) != reconciler.KindInvalid || !strings.Contains(fmt.Sprint(err), "older than the 0.27.0") {
		t.Errorf("upgrade_cluster onto an older chart: %v, want a refusal", err)
	}
}

// TestDirSinkRefusalWritesNothing: a plan refused (Secrets with no way to encrypt them)
// leaves no directory behind, not even the one it would have created.
func TestDirSinkRefusalWritesNothing(t *testing.T) {
	t.Parallel()
	cfg := generator.DefaultConfig()
	p := &reconciler.Pipeline{Config: generator.MustSite(cfg)} // neither recipients nor plaintext allowed
	root := filepath.Join(t.TempDir(), "out", "sub")
	sink := &reconciler.DirSink{Root: root}
	if _, err := sink.Apply(context.Background(), p, event(t, "01-prod-a-create.yaml")); err == nil {
		t.Fatal("plaintext Secrets written without --insecure-plaintext-secrets")
	}
	if _, err := os.Stat(filepath.Dir(root)); !os.IsNotExist(err) {
		t.Errorf("a refused render left %s behind (%v)", filepath.Dir(root), err)
	}
}

// TestDirSinkTreeListsFiles: the directory read as a gitrepo.Tree lists the regular files
// under a directory in Git's order (as their paths sort); a symbolic link is never followed:
// one under the directory is left out, one on the way to it is refused.
func TestDirSinkTreeListsFiles(t *testing.T) {
	t.Parallel()
	root, outside := t.TempDir(), t.TempDir()
	for _, f := range []string{"a-b", "a.txt", "a/x", "a/y/z", "linked/secret"} {
		base := root
		if strings.HasPrefix(f, "linked/") {
			base = outside
		}
		p := filepath.Join(base, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(root, "a.txt"), filepath.Join(root, "a", "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "linked"), filepath.Join(root, "linked")); err != nil {
		t.Fatal(err)
	}
	tree, done, err := (&reconciler.DirSink{Root: root}).Tree()
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	for _, tc := range []struct {
		dir  string
		want []string
	}{
		{".", []string{"a-b", "a.txt", "a/x", "a/y/z"}},
		{"a", []string{"a/x", "a/y/z"}},
		{"a/x", nil}, // a file: nothing under it
		{"missing", nil},
	} {
		got, err := tree.ListFiles(tc.dir)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ListFiles(%q) = %q, %v; want %q", tc.dir, got, err, tc.want)
		}
	}
	if got, err := tree.ListFiles("linked"); !errors.Is(err, reconciler.ErrSymlink) {
		t.Errorf("ListFiles through a link = %q, %v; want ErrSymlink", got, err)
	}

	empty, done, err := (&reconciler.DirSink{Root: filepath.Join(root, "none")}).Tree()
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	if got, err := empty.ListFiles("."); got != nil || err != nil {
		t.Errorf("a missing directory lists %q, %v; want nothing", got, err)
	}
}
