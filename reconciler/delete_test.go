package reconciler_test

import (
	"context"
	"errors"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/gitrepo"
	"github.com/magnum-gitops/magnum-gitops/reconciler"
)

// deleted is created with the cluster's delete_cluster event committed: the delete's first
// phase, and the record its later commits are made for.
func deleted(t *testing.T) (*reconciler.Pipeline, *reconciler.GitSink, string, reconciler.ClusterRecord) {
	t.Helper()
	p, sink, dir := created(t)
	del := event(t, "08-prod-a-delete.yaml")
	out, err := sink.Apply(context.Background(), p, del)
	if err != nil {
		t.Fatal(err)
	}
	return p, sink, dir, reconciler.ClusterRecord{Event: del, StackID: out.Plan.Result.ReleaseName, Namespace: out.Plan.Result.Namespace, Root: out.Plan.Result.Root}
}

// management is the management cluster as a delete or upgrade step sees it: whether the
// CAPI Cluster is gone, whether Flux applied a commit and the version Cluster API rolled
// out, as set; the Secrets deleted, recorded.
type management struct {
	mu            sync.Mutex
	gone, applied bool
	rolledOut     string
	fail          error
	deleted       []string
}

func (m *management) RolledOut(_ context.Context, _ reconciler.ClusterRecord, version string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.rolledOut == version
}

func (m *management) rollOut(version string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rolledOut = version
}

func (m *management) set(gone, applied bool, fail error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gone, m.applied, m.fail = gone, applied, fail
}

func (m *management) ClusterGone(context.Context, reconciler.ClusterRecord) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.gone
}

func (m *management) Applied(reconciler.ClusterRecord, string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.applied
}

func (m *management) DeleteSecrets(_ context.Context, _ reconciler.ClusterRecord, names []string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return m.fail
	}
	m.deleted = append(m.deleted, names...)
	return nil
}

// deleter reconciles the deleted cluster rec as serve's leader does, its delete step
// asking m; its reports are read from what Reconcile returns.
type deleter struct {
	r        *reconciler.Reconciler
	clusters *reconciler.Clusters
	rec      reconciler.ClusterRecord
	progress []reconciler.DeleteProgress
	// pushed are the namespaces its Report asks Flux to fetch.
	pushed []string
}

func newDeleter(p *reconciler.Pipeline, sink *reconciler.GitSink, rec reconciler.ClusterRecord, m reconciler.Management) *deleter {
	d := &deleter{clusters: reconciler.NewClusters(), rec: rec}
	d.clusters.Observe(rec.Event, reconciler.Summary{StackID: rec.StackID, Namespace: rec.Namespace, Root: rec.Root}, time.Now())
	d.r = &reconciler.Reconciler{Pipeline: p, Sink: sink, Clusters: d.clusters, Management: m}
	d.r.Start()
	return d
}

// step reconciles the cluster once and returns what its delete step reported.
func (d *deleter) step() []reconciler.DeleteProgress {
	d.progress, d.pushed = nil, nil
	for _, res := range d.r.Reconcile(context.Background(), d.rec.Event.Cluster.UUID).Results {
		if res.Delete != nil {
			d.progress = append(d.progress, *res.Delete)
		}
		for _, p := range res.Pushed {
			d.pushed = append(d.pushed, p.Namespace)
		}
	}
	return d.progress
}

// deleteAll takes a deleted cluster through its whole delete, the CAPI Cluster gone and
// every commit applied, and returns the commit that completed it.
func deleteAll(t *testing.T, p *reconciler.Pipeline, sink *reconciler.GitSink, rec reconciler.ClusterRecord) string {
	t.Helper()
	d := newDeleter(p, sink, rec, &management{gone: true, applied: true})
	d.step()
	done := d.step()
	if len(done) != 1 || done[0].To != generator.DeleteDone || done[0].Commit == "" {
		t.Fatalf("the delete did not complete: %+v", done)
	}
	return done[0].Commit
}

// TestDeleteStep: a deleted cluster's reconciles take it through the phases of its delete,
// each only once the management cluster allows it: the Secret files leave Git once the
// CAPI Cluster is gone; the Secrets leave the management cluster only once Flux applied
// that and while the Cluster is still gone, then the directory leaves Git and the cluster
// is forgotten. A step that waits reports nothing; a failed one reports its error and is
// taken again by the next reconcile; a new process finds the removal in the history.
func TestDeleteStep(t *testing.T) {
	t.Parallel()
	type step struct {
		gone, applied, fail, restart bool
		// want: the phase the step went from to the next ("" when it reports nothing),
		// whether it failed, the phase the directory stands at after it, and the Secrets
		// deleted from the management cluster so far.
		from    string
		failed  bool
		phase   generator.DeletePhase
		deleted int
	}
	const secrets = 5
	tests := []struct {
		name  string
		steps []step
	}{{
		name: "the whole delete",
		steps: []step{
			{phase: generator.DeleteAwaitingCluster},
			{gone: true, from: "AwaitingCluster", phase: generator.DeleteSecretsRemoved},
			{gone: true, phase: generator.DeleteSecretsRemoved},
			{gone: true, applied: true, fail: true, from: "SecretsRemoved", failed: true, phase: generator.DeleteSecretsRemoved},
			{gone: true, applied: true, from: "SecretsRemoved", phase: generator.DeleteDone, deleted: secrets},
			{gone: true, applied: true, phase: generator.DeleteDone, deleted: secrets},
		},
	}, {
		name: "a Cluster that came back after the Secret files left",
		steps: []step{
			{gone: true, from: "AwaitingCluster", phase: generator.DeleteSecretsRemoved},
			{applied: true, phase: generator.DeleteSecretsRemoved},
		},
	}, {
		name: "a new process finds the removal in the history",
		steps: []step{
			{gone: true, from: "AwaitingCluster", phase: generator.DeleteSecretsRemoved},
			{gone: true, applied: true, restart: true, from: "SecretsRemoved", phase: generator.DeleteDone, deleted: secrets},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, sink, dir, rec := deleted(t)
			clusterDir := generator.ClusterDir(rec.Root, rec.Namespace, rec.StackID)
			m := &management{}
			d := newDeleter(p, sink, rec, m)
			for i, s := range tt.steps {
				if s.restart {
					d = newDeleter(p, sink, rec, m)
				}
				var fail error
				if s.fail {
					fail = errors.New("secrets: the API server refused")
				}
				m.set(s.gone, s.applied, fail)
				got := d.step()
				var want []string
				if s.from != "" {
					want = []string{s.from}
				}
				var from []string
				for _, pr := range got {
					from = append(from, pr.From.String())
					if (pr.Err != nil) != s.failed || !s.failed && pr.Commit == "" {
						t.Errorf("step %d: reported %+v; want failed %v, or a commit", i, pr, s.failed)
					}
					if pushed := []string{rec.Namespace}; pr.Commit != "" && !slices.Equal(d.pushed, pushed) {
						t.Errorf("step %d: the report asks Flux to fetch %v; want %v", i, d.pushed, pushed)
					}
					if pr.To == generator.DeleteSecretsRemoved && len(pr.Secrets) != secrets {
						t.Errorf("step %d: the Secret files removed: %v; want %d", i, pr.Secrets, secrets)
					}
				}
				if diff := cmp.Diff(want, from); diff != "" {
					t.Errorf("step %d: progress reported (-want +got):\n%s", i, diff)
				}
				files := strings.Fields(gitOut(t, dir, "ls-tree", "--name-only", "main", clusterDir+"/"))
				for k, f := range files {
					files[k] = path.Base(f)
				}
				if phase := generator.DeletePhaseOf(files, p.Config.DeployFile()); phase != s.phase {
					t.Errorf("step %d: the directory stands at %s; want %s: %v", i, phase, s.phase, files)
				}
				if len(m.deleted) != s.deleted {
					t.Errorf("step %d: Secrets deleted from the management cluster: %v; want %d", i, m.deleted, s.deleted)
				}
				_, indexed := d.clusters.Get(rec.Event.Cluster.UUID)
				if forgotten := s.phase == generator.DeleteDone; indexed == forgotten {
					t.Errorf("step %d: the cluster indexed: %v; want %v", i, indexed, !forgotten)
				}
			}
		})
	}
}

// TestDeleteStepFollowsTheHead: the delete's commits are planned on the head they are
// pushed on. When an operator reverts the delete_cluster commit (the HelmRelease comes
// back, and the cluster it recreates needs its Secrets), no delete step removes anything,
// whether this clone has fetched the revert or learns of it from the refused push.
func TestDeleteStepFollowsTheHead(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name            string
		revert, fetched bool
	}{
		{name: "no revert"},
		{name: "revert fetched", revert: true, fetched: true},
		{name: "revert on the remote only", revert: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			p, sink, dir, rec := deleted(t)
			clusterDir := generator.ClusterDir(rec.Root, rec.Namespace, rec.StackID)
			if tc.revert {
				work := filepath.Join(t.TempDir(), "work")
				for _, args := range [][]string{{"clone", "-q", dir, work}, {"-C", work, "-c", "user.name=ops", "-c", "user.email=ops@example.org",
					"revert", "--no-edit", "HEAD"}, {"-C", work, "push", "-q", "origin", "main"}} {
					if b, err := exec.Command("git", args...).CombinedOutput(); err != nil {
						t.Fatalf("git %v: %v\n%s", args, err, b)
					}
				}
				if tc.fetched {
					if err := sink.Repo.Fetch(ctx); err != nil {
						t.Fatal(err)
					}
				}
			}
			before := gitOut(t, dir, "rev-parse", "main")
			if !tc.revert {
				deleteAll(t, p, sink, rec)
				if files := gitOut(t, dir, "ls-tree", "-r", "--name-only", "main"); strings.Contains(files, clusterDir+"/") {
					t.Errorf("the directory is still in Git:\n%s", files)
				}
				return
			}
			d := newDeleter(p, sink, rec, &management{gone: true, applied: true})
			for range 2 {
				if got := d.step(); len(got) != 0 {
					t.Errorf("a delete step after a revert reported %+v; want nothing", got)
				}
			}
			if after := gitOut(t, dir, "rev-parse", "main"); after != before {
				t.Errorf("main moved from %s to %s after the revert:\n%s", before, after, gitOut(t, dir, "log", "-2", "--stat", "main"))
			}
			files := gitOut(t, dir, "ls-tree", "-r", "--name-only", "main", clusterDir)
			for _, want := range []string{"helmrelease.yaml", "secret-cloud-credentials.sops.yaml", "secret-ca.sops.yaml"} {
				if !strings.Contains(files, path.Join(clusterDir, want)) {
					t.Errorf("%s left Git after the revert:\n%s", want, files)
				}
			}
		})
	}
}

// TestSecretsRemoval: a service that did not make a delete's removal of the Secret files finds it,
// with the Secrets it named, in the history its clone holds; a clone whose history does
// not reach it gets the oldest commit it holds, which came after it (Flux must apply that
// one first), and every Secret name the cluster may have had.
func TestSecretsRemoval(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, sink, dir, rec := deleted(t)
	removed := newDeleter(p, sink, rec, &management{gone: true}).step()
	if len(removed) != 1 || removed[0].Commit == "" {
		t.Fatalf("removing the Secret files: %+v", removed)
	}
	named, removal := removed[0].Secrets, removed[0].Commit
	for i := range 3 {
		if _, err := sink.Repo.Apply(ctx, gitrepo.Change{Files: map[string][]byte{"README.md": []byte(strings.Repeat("#", i+1))}, Subject: "readme"}); err != nil {
			t.Fatal(err)
		}
	}
	all := len(generator.SecretSuffixes)
	for _, tc := range []struct {
		name    string
		history gitrepo.History
		commit  string
		secrets int
	}{
		{"the whole history", gitrepo.History{}, removal, len(named)},
		{"a history that reaches it", gitrepo.History{Commits: 4}, removal, len(named)},
		{"a history that does not", gitrepo.History{Commits: 2}, strings.TrimSpace(gitOut(t, dir, "rev-parse", "main~1")), all},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo, err := gitrepo.Open(ctx, gitrepo.Options{URL: "file://" + dir, History: tc.history,
				Author: gitrepo.Signature{Name: "magnum-gitops", Email: "m@example.org"}})
			if err != nil {
				t.Fatal(err)
			}
			commit, secrets, err := reconciler.SecretsRemoval(ctx, repo, rec)
			if err != nil || commit != tc.commit || len(secrets) != tc.secrets {
				t.Errorf("SecretsRemoval = %s, %d Secrets, %v; want %s, %d", commit, len(secrets), err, tc.commit, tc.secrets)
			}
		})
	}
}
