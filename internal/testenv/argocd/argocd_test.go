package argocd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/internal/gitserver"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, &env)) }

func TestMissing(t *testing.T) {
	t.Parallel()
	all := map[string]os.FileMode{
		"argocd-application-controller": 0o755, "argocd-repo-server": 0o755, "helm": 0o755,
		"git-verify-wrapper.sh": 0o755, "crds/application-crd.yaml": 0o644, "crds/appproject-crd.yaml": 0o644,
	}
	without := func(name string) map[string]os.FileMode {
		m := map[string]os.FileMode{}
		for k, v := range all {
			if k != name {
				m[k] = v
			}
		}
		return m
	}
	for _, tc := range []struct {
		name  string
		files map[string]os.FileMode
		want  string
	}{
		{"all there", all, ""},
		{"no controller", without("argocd-application-controller"), "argocd-application-controller"},
		{"no helm", without("helm"), "helm"},
		{"no git-verify-wrapper.sh", without("git-verify-wrapper.sh"), "git-verify-wrapper.sh"},
		{"no AppProject CRD", without("crds/appproject-crd.yaml"), "crds/appproject-crd.yaml"},
		{"repo-server not executable", func() map[string]os.FileMode {
			m := without("")
			m["argocd-repo-server"] = 0o644
			return m
		}(), "argocd-repo-server"},
		{"a CRD need not be executable", func() map[string]os.FileMode {
			m := without("")
			m["crds/application-crd.yaml"] = 0o600
			return m
		}(), ""},
		{"empty", nil, "argocd-application-controller"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			for p, mode := range tc.files {
				full := filepath.Join(dir, p)
				if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(full, []byte("x"), mode); err != nil {
					t.Fatal(err)
				}
			}
			if got := missing(dir); got != tc.want {
				t.Errorf("missing = %q, want %q", got, tc.want)
			}
		})
	}
}

// Names in the test's Application.
const (
	appName   = "demo"
	destNS    = "demo"       // the destination namespace, created by CreateNamespace=true
	toolsNS   = "demo-tools" // a Namespace the manifests declare
	appPath   = "demo"       // the directory of the repository the Application syncs
	waitLimit = 4 * time.Minute
	// retriesLimit bounds the wait for an automated sync's five retries (about 155 s of
	// back-off) to be spent.
	retriesLimit = 6 * time.Minute
)

// TestArgoCD runs the real Argo CD against a real Git server and API server through the
// states of one Application (synced and healthy, a sync retried then failed, a comparison
// error, progressing, degraded), asserting what Argo CD did in the API server at each, and
// with ARGOCD_RECORD=1 records each Application into fixtures/status/argo.
func TestArgoCD(t *testing.T) {
	testenv.Require(t, env)
	git := gitserver.Start(t)
	argo := Start(t, env, Options{})
	ctx := context.Background()
	repo := newWorkRepo(t, git, "apps")

	// 1. A Namespace and a ConfigMap: synced, healthy, at the pushed commit.
	commit1 := repo.push("a namespace and a config map", map[string]string{
		"namespace.yaml": namespaceYAML,
		"configmap.yaml": configMapYAML("hello"),
	})
	if err := argo.Client.Create(ctx, application(repo.url)); err != nil {
		t.Fatal(err)
	}
	app := argo.WaitFor(appName, waitLimit, syncedAt(commit1, "Healthy"))
	cm := &corev1.ConfigMap{}
	if err := argo.Client.Get(ctx, client.ObjectKey{Namespace: destNS, Name: "settings"}, cm); err != nil {
		t.Fatalf("the synced ConfigMap: %v", err)
	}
	if cm.Data["greeting"] != "hello" {
		t.Errorf("ConfigMap data = %v, want greeting: hello", cm.Data)
	}
	if id := cm.Annotations["argocd.argoproj.io/tracking-id"]; !strings.HasPrefix(id, appName+":") {
		t.Errorf("ConfigMap tracking-id = %q: not applied by Application %s", id, appName)
	}
	for _, ns := range []string{destNS, toolsNS} {
		if err := argo.Client.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{}); err != nil {
			t.Errorf("namespace %s: %v", ns, err)
		}
	}
	record(t, app, "01-synced-healthy", "a Namespace and a ConfigMap synced from Git, automated sync, Synced/Healthy at the pushed commit")

	// Self-heal: a deleted managed object comes back.
	oldUID := cm.UID
	if err := argo.Client.Delete(ctx, cm); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, argo, waitLimit, "the deleted ConfigMap recreated by self-heal", func() bool {
		cur := &corev1.ConfigMap{}
		err := argo.Client.Get(ctx, client.ObjectKeyFromObject(cm), cur)
		return err == nil && cur.UID != oldUID
	})

	// 2. An object of a kind the API server does not serve: the automated sync fails, and
	// is retried (an automated sync without spec.syncPolicy.retry, as the generator writes
	// them, is retried 5 times, 5 s apart at first, doubling) until it fails for good.
	commit2 := repo.push("a widget, whose CRD is not installed", map[string]string{"widget.yaml": widgetYAML})
	argo.Refresh(appName, "normal")
	app = argo.WaitFor(appName, waitLimit, operationAt(commit2, "Running", func(app *unstructured.Unstructured) bool {
		n, _, _ := unstructured.NestedInt64(app.Object, "status", "operationState", "retryCount")
		return n >= 1
	}))
	if msg := str(app, "status", "operationState", "message"); !strings.Contains(msg, "Retrying attempt") {
		t.Errorf("operationState.message of a retried sync = %q", msg)
	}
	record(t, app, "02-sync-retrying", "a commit adding an object of a kind without a CRD: the automated sync failed and is being retried")
	app = argo.WaitFor(appName, retriesLimit, operationAt(commit2, "Failed", nil))
	if msg := str(app, "status", "operationState", "message"); !strings.Contains(msg, "widgets.example.org") {
		t.Errorf("operationState.message of the failed sync = %q, want it to name widgets.example.org", msg)
	}
	if err := argo.Client.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}); err != nil {
		t.Errorf("the ConfigMap after a failed sync: %v", err)
	}
	record(t, app, "03-sync-failed", "the same commit once the automated sync's retries are spent: Failed")

	// 3. A manifest that is not YAML: the repo-server cannot render, the comparison fails.
	commit3 := repo.push("a broken manifest", map[string]string{"widget.yaml": "", "broken.yaml": brokenYAML})
	argo.Refresh(appName, "normal")
	app = argo.WaitFor(appName, waitLimit, func(app *unstructured.Unstructured) (bool, string) {
		for _, c := range conditions(app) {
			if msg, _ := c["message"].(string); c["type"] == "ComparisonError" && strings.Contains(msg, "broken.yaml") {
				return true, ""
			}
		}
		return false, fmt.Sprintf("conditions %v, want a ComparisonError naming broken.yaml of %s", conditions(app), commit3)
	})
	if err := argo.Client.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}); err != nil {
		t.Errorf("the ConfigMap after a failed comparison: %v (nothing may be pruned on an error)", err)
	}
	record(t, app, "04-comparison-error", "a commit with a manifest that is not YAML: ComparisonError, nothing synced")

	// 4. A Deployment: no kubelet or controller-manager runs, so it never rolls out.
	commit4 := repo.push("a deployment, and a changed config map", map[string]string{
		"broken.yaml":     "",
		"configmap.yaml":  configMapYAML("hello again"),
		"deployment.yaml": deploymentYAML,
	})
	argo.Refresh(appName, "normal")
	app = argo.WaitFor(appName, waitLimit, syncedAt(commit4, "Progressing"))
	if err := argo.Client.Get(ctx, client.ObjectKeyFromObject(cm), cm); err != nil {
		t.Fatal(err)
	}
	if cm.Data["greeting"] != "hello again" {
		t.Errorf("ConfigMap data after the second sync = %v, want greeting: hello again", cm.Data)
	}
	dep := &appsv1.Deployment{}
	if err := argo.Client.Get(ctx, client.ObjectKey{Namespace: destNS, Name: "web"}, dep); err != nil {
		t.Fatalf("the synced Deployment: %v", err)
	}
	if conditions(app) != nil {
		t.Errorf("conditions after a good commit: %v, want none", conditions(app))
	}
	record(t, app, "05-progressing", "a commit adding a Deployment that never rolls out (no kubelet): Synced/Progressing")

	// 5. The Deployment past its progress deadline: the test writes the status the
	// deployment controller would (none runs), and Argo CD's health check reads it.
	dep.Status = appsv1.DeploymentStatus{
		ObservedGeneration:  dep.Generation,
		Replicas:            1,
		UnavailableReplicas: 1,
		Conditions: []appsv1.DeploymentCondition{{
			Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded",
			Message:            `ReplicaSet "web-5d8f7c9b4" has timed out progressing.`,
			LastUpdateTime:     metav1.Now(),
			LastTransitionTime: metav1.Now(),
		}},
	}
	if err := argo.Client.Status().Update(ctx, dep); err != nil {
		t.Fatal(err)
	}
	app = argo.WaitFor(appName, waitLimit, syncedAt(commit4, "Degraded"))
	record(t, app, "06-degraded", "the Deployment of step 4 past its progress deadline (its status written by the test, "+
		"standing in for the deployment controller): Synced/Degraded")
}

// syncedAt waits for an Application synced at commit with the given health, its sync
// operation of that commit finished: sync and health are written by the comparison, which
// can report Synced while the operation that applied the commit is still Running.
func syncedAt(commit, health string) func(*unstructured.Unstructured) (bool, string) {
	operation := operationAt(commit, "Succeeded", nil)
	return func(app *unstructured.Unstructured) (bool, string) {
		sync := str(app, "status", "sync", "status")
		rev := str(app, "status", "sync", "revision")
		h := str(app, "status", "health", "status")
		if sync != "Synced" || rev != commit || h != health {
			return false, fmt.Sprintf("sync %q at %q, health %q; want Synced at %s, %s", sync, rev, h, commit, health)
		}
		return operation(app)
	}
}

// operationAt waits for the sync operation of commit in phase, and more if more is set.
func operationAt(commit, phase string, more func(*unstructured.Unstructured) bool) func(*unstructured.Unstructured) (bool, string) {
	return func(app *unstructured.Unstructured) (bool, string) {
		p := str(app, "status", "operationState", "phase")
		rev := str(app, "status", "operationState", "operation", "sync", "revision")
		ok := p == phase && rev == commit && (more == nil || more(app))
		return ok, fmt.Sprintf("operation phase %q at %q, want %s at %s", p, rev, phase, commit)
	}
}

// waitUntil polls cond every second, failing the test after timeout.
func waitUntil(t *testing.T, argo *Argo, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %s\n%s", what, timeout, argo.Logs())
		}
		time.Sleep(time.Second)
	}
}

func str(u *unstructured.Unstructured, fields ...string) string {
	s, _, _ := unstructured.NestedString(u.Object, fields...)
	return s
}

func conditions(app *unstructured.Unstructured) []map[string]any {
	list, _, _ := unstructured.NestedSlice(app.Object, "status", "conditions")
	var out []map[string]any
	for _, c := range list {
		if m, ok := c.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// application is the Application the test syncs: the generator's sync policy (automated,
// server-side apply) with prune, self-heal and the destination namespace created.
func application(repoURL string) *unstructured.Unstructured {
	app := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{
			"project": "default",
			"source":  map[string]any{"repoURL": repoURL, "path": appPath, "targetRevision": "main"},
			"destination": map[string]any{
				"server":    InClusterServer,
				"namespace": destNS,
			},
			"syncPolicy": map[string]any{
				"automated":   map[string]any{"prune": true, "selfHeal": true},
				"syncOptions": []any{"CreateNamespace=true", "ServerSideApply=true"},
			},
		},
	}}
	app.SetGroupVersionKind(ApplicationGVK)
	app.SetNamespace(Namespace)
	app.SetName(appName)
	return app
}

// The manifests the test pushes.
const (
	namespaceYAML = `apiVersion: v1
kind: Namespace
metadata:
  name: ` + toolsNS + `
`
	widgetYAML = `apiVersion: widgets.example.org/v1
kind: Widget
metadata:
  name: gadget
spec:
  size: 3
`
	// brokenYAML is a mapping whose value starts a flow sequence that never ends.
	brokenYAML = `apiVersion: v1
kind: ConfigMap
metadata:
  name: broken
data: [unterminated
`
	deploymentYAML = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: web
        image: registry.example.org/web:1.0.0
`
)

func configMapYAML(greeting string) string {
	return `apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  greeting: ` + greeting + `
`
}

// workRepo is a clone of a repository of the Git server that the test commits to.
type workRepo struct {
	t   *testing.T
	url string
	dir string
}

func newWorkRepo(t *testing.T, git *gitserver.Server, name string) *workRepo {
	t.Helper()
	url := git.Init(name)
	dir := t.TempDir()
	gitserver.Git(t, dir, "clone", "-q", url, ".")
	return &workRepo{t: t, url: url, dir: dir}
}

// push writes files under appPath (an empty content removes the file), commits them and
// pushes to main; it returns the commit.
func (r *workRepo) push(message string, files map[string]string) string {
	r.t.Helper()
	return r.pushAt(appPath, message, files)
}

// pushAt is push with the files under dir, a path in the repository.
func (r *workRepo) pushAt(dir, message string, files map[string]string) string {
	r.t.Helper()
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		p := filepath.Join(r.dir, dir, name)
		if files[name] == "" {
			if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
				r.t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			r.t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(files[name]), 0o644); err != nil {
			r.t.Fatal(err)
		}
	}
	gitserver.Git(r.t, r.dir, "add", "-A")
	gitserver.Git(r.t, r.dir, "commit", "-q", "-m", message)
	gitserver.Git(r.t, r.dir, "push", "-q", "origin", "HEAD:main")
	return strings.TrimSpace(gitserver.Git(r.t, r.dir, "rev-parse", "HEAD"))
}

// recordDir is where ARGOCD_RECORD=1 writes the Applications.
func recordDir() string { return filepath.Join(testenv.RepoRoot(), "fixtures", "status", "argo") }

// record writes the Application, stripped (Strip), to recordDir()/<name>.yaml with a
// header saying how it was recorded, when ARGOCD_RECORD=1; CI's runs leave the files be.
func record(t *testing.T, app *unstructured.Unstructured, name, what string) {
	t.Helper()
	if os.Getenv("ARGOCD_RECORD") != "1" {
		return
	}
	b, err := yaml.Marshal(Strip(app).Object)
	if err != nil {
		t.Fatal(err)
	}
	header := fmt.Sprintf("# Recorded from the real Argo CD %s controllers (argocd-application-controller and\n"+
		"# argocd-repo-server, out of cluster against kube-apiserver, syncing from a Git smart-HTTP\n"+
		"# server) by TestArgoCD in internal/testenv/argocd with ARGOCD_RECORD=1, on %s.\n"+
		"# Step: %s.\n"+
		"# The Application as the API server returned it, without metadata.managedFields, uid,\n"+
		"# resourceVersion and creationTimestamp. Do not edit: record again.\n",
		Version, time.Now().UTC().Format("2006-01-02"), what)
	if err := os.MkdirAll(recordDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(recordDir(), name+".yaml"), append([]byte(header), b...), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("recorded %s", name)
}
