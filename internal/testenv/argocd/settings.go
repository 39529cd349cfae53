package argocd

import (
	"context"
	"fmt"
	"os"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
)

// What Argo CD reads in its namespace (Argo CD's common package names them).
const (
	configMapName       = "argocd-cm"
	rbacConfigMapName   = "argocd-rbac-cm"
	paramsConfigMapName = "argocd-cmd-params-cm"
	secretName          = "argocd-secret"
	// partOfLabel must be on each of them: Argo CD's settings manager watches only
	// ConfigMaps and Secrets so labelled, and reports any other as not found.
	partOfLabel = "app.kubernetes.io/part-of"
)

// settings is the data of argocd-cm and argocd-cmd-params-cm. Each value says why it
// differs from Argo CD's default, if it does; the processes get them as env vars (envFor).
func (a *Argo) settings() map[string]map[string]string {
	return map[string]map[string]string{
		configMapName: {
			// How often every Application is compared with Git, and how long the
			// repo-server trusts a branch's resolved commit (Options.Reconciliation).
			"timeout.reconciliation": a.opts.Reconciliation.String(),
			// Argo CD adds up to a minute to each period to spread load; a test has none.
			"timeout.reconciliation.jitter": "0s",
		},
		paramsConfigMapName: {
			"redis.server": a.Redis,
			"repo.server":  a.RepoServer,
			// A manifest generation that has not answered in 30 s will not (the default
			// is 60 s): fail the comparison sooner, with the repo-server's error.
			"controller.repo.server.timeout.seconds": "30",
			// By default the controller hides a repo-server error (a broken manifest in
			// Git) for 180 s before it shows as a ComparisonError; a test wants it on the
			// next comparison. A duration: "180" without a unit, as Argo CD's sample
			// argocd-cmd-params-cm writes it, is rejected and the default kept.
			"controller.repo.error.grace.period.seconds": "0s",
			// Logs a person reads when a test fails, rather than JSON.
			"controller.log.format": "text",
			"controller.log.level":  a.opts.LogLevel,
			"reposerver.log.format": "text",
			"reposerver.log.level":  a.opts.LogLevel,
		},
	}
}

// envBinding is one configMapKeyRef env var of Argo CD's manifests (manifests/base).
type envBinding struct{ env, configMap, key string }

// envFrom lists, for each process, the env vars Argo CD's manifests fill from the keys
// settings sets.
var envFrom = map[string][]envBinding{
	repoServerName: {
		{"ARGOCD_RECONCILIATION_TIMEOUT", configMapName, "timeout.reconciliation"},
		{"REDIS_SERVER", paramsConfigMapName, "redis.server"},
		{"ARGOCD_REPO_SERVER_LOGFORMAT", paramsConfigMapName, "reposerver.log.format"},
		{"ARGOCD_REPO_SERVER_LOGLEVEL", paramsConfigMapName, "reposerver.log.level"},
	},
	controllerName: {
		{"ARGOCD_RECONCILIATION_TIMEOUT", configMapName, "timeout.reconciliation"},
		{"ARGOCD_RECONCILIATION_JITTER", configMapName, "timeout.reconciliation.jitter"},
		{"REDIS_SERVER", paramsConfigMapName, "redis.server"},
		{"ARGOCD_APPLICATION_CONTROLLER_REPO_SERVER", paramsConfigMapName, "repo.server"},
		{"ARGOCD_APPLICATION_CONTROLLER_REPO_SERVER_TIMEOUT_SECONDS", paramsConfigMapName, "controller.repo.server.timeout.seconds"},
		{"ARGOCD_REPO_ERROR_GRACE_PERIOD_SECONDS", paramsConfigMapName, "controller.repo.error.grace.period.seconds"},
		{"ARGOCD_APPLICATION_CONTROLLER_LOGFORMAT", paramsConfigMapName, "controller.log.format"},
		{"ARGOCD_APPLICATION_CONTROLLER_LOGLEVEL", paramsConfigMapName, "controller.log.level"},
	},
}

// envFor is the env a process gets from the ConfigMaps' data, as the kubelet would fill
// it. A binding to a key the data lacks is an error: the process would silently run with
// Argo CD's default instead.
func envFor(process string, data map[string]map[string]string) ([]string, error) {
	bindings, ok := envFrom[process]
	if !ok {
		return nil, fmt.Errorf("argocd: no env bindings for %s", process)
	}
	var env []string
	for _, b := range bindings {
		v, ok := data[b.configMap][b.key]
		if !ok {
			return nil, fmt.Errorf("argocd: %s reads %s from %s key %s, which is not set", process, b.env, b.configMap, b.key)
		}
		env = append(env, b.env+"="+v)
	}
	slices.Sort(env)
	return env, nil
}

// processEnv is envFor for the harness's own settings, failing the test on error.
func (a *Argo) processEnv(process string) []string {
	a.t.Helper()
	env, err := envFor(process, a.settings())
	if err != nil {
		a.t.Fatal(err)
	}
	return env
}

// configure creates, in the namespace argocd, what the controllers read there: the
// ConfigMaps of settings, an empty argocd-rbac-cm (RBAC is the API server's, which the
// controllers do not run), argocd-secret with a random server.secretkey (the settings
// manager reports settings without one as incomplete), and the AppProject default, which
// every Application names and which allows any repository, destination and kind. It then
// writes the kubeconfig the controller reaches env with.
func (a *Argo) configure(ctx context.Context, env *testenv.Env) {
	t := a.t
	t.Helper()
	if err := env.EnsureNamespace(ctx, Namespace); err != nil {
		t.Fatal(err)
	}
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: Namespace, Labels: map[string]string{partOfLabel: "argocd"}}
	}
	objs := []client.Object{
		&corev1.ConfigMap{ObjectMeta: meta(rbacConfigMapName)},
		&corev1.Secret{ObjectMeta: meta(secretName), Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{"server.secretkey": []byte(randomHex(32))}},
		defaultProject(),
	}
	for name, data := range a.settings() {
		objs = append(objs, &corev1.ConfigMap{ObjectMeta: meta(name), Data: data})
	}
	for _, o := range objs {
		if err := upsert(ctx, a.Client, o); err != nil {
			t.Fatalf("creating %s/%s: %v", Namespace, o.GetName(), err)
		}
	}
	kubeconfig, err := env.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(a.kubeconfig(), kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
}

// kubeconfig is the file holding an administrator's kubeconfig of the API server.
func (a *Argo) kubeconfig() string { return a.path("kubeconfig") }

// defaultProject is the AppProject default as Argo CD's API server creates it on first
// start (it is not running here): anything from anywhere to anywhere.
func defaultProject() *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1",
		"kind":       "AppProject",
		"metadata":   map[string]any{"name": "default", "namespace": Namespace},
		"spec": map[string]any{
			"sourceRepos":              []any{"*"},
			"destinations":             []any{map[string]any{"server": "*", "namespace": "*"}},
			"clusterResourceWhitelist": []any{map[string]any{"group": "*", "kind": "*"}},
		},
	}}
	return u
}

// upsert creates obj, or replaces what is there (a second Start against the same API
// server).
func upsert(ctx context.Context, c client.Client, obj client.Object) error {
	err := c.Create(ctx, obj)
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	cur := obj.DeepCopyObject().(client.Object)
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), cur); err != nil {
		return err
	}
	obj.SetResourceVersion(cur.GetResourceVersion())
	return c.Update(ctx, obj)
}
