package argocd

import (
	"context"
	"maps"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// External is an API server this package did not start (the end-to-end harness's, which
// also runs Cluster API), and what Argo CD needs there beyond Start's own settings.
type External struct {
	// Client reaches the API server as an administrator. Its scheme must hold
	// apiextensions/v1: the CRDs are installed through it.
	Client client.Client
	// KubeConfig is an administrator's kubeconfig, for the application controller.
	KubeConfig []byte
	// ArgoCDCM are argocd-cm keys set beside the harness's own, e.g.
	// kustomize.buildOptions: --enable-helm for Applications whose kustomize source
	// inflates a Helm chart.
	ArgoCDCM map[string]string
	// Path is put first on the repo-server's PATH (after Argo CD's own directory, which
	// holds helm): kustomize's directory, for kustomize sources.
	Path string
}

// StartOn is Start against an External API server: the same processes, settings and
// checks (ARGOCD_TESTS, the binaries, redis-server, the sops CLI with
// Options.AgeIdentity), with argocd-cm holding ext.ArgoCDCM too. Everything is stopped
// when the test ends. ext.Path reaches the repo-server through the test's PATH, which it
// sets (t.Setenv): not for parallel tests.
func StartOn(t testing.TB, ext External, opts Options) *Argo {
	t.Helper()
	bin, sopsDir, redis := preflight(t, &opts)
	if ext.Path != "" {
		t.Setenv("PATH", ext.Path+string(os.PathListSeparator)+os.Getenv("PATH"))
	}
	a := &Argo{Client: ext.Client, t: t, dir: workDir(t), bin: bin, opts: opts}
	a.startAll(redis, sopsDir, func(ctx context.Context) { a.configureOn(ctx, ext) })
	return a
}

// configureOn is configure for an External API server: the same objects in the namespace
// argocd, argocd-cm with ext.ArgoCDCM added (the controller reads it, and hands the
// kustomize settings to the repo-server with each manifest request), and the kubeconfig.
func (a *Argo) configureOn(ctx context.Context, ext External) {
	t := a.t
	t.Helper()
	ns := &corev1.Namespace{}
	ns.Name = Namespace
	if err := client.IgnoreAlreadyExists(a.Client.Create(ctx, ns)); err != nil {
		t.Fatal(err)
	}
	meta := func(name string) corev1.ConfigMap {
		cm := corev1.ConfigMap{}
		cm.Name, cm.Namespace, cm.Labels = name, Namespace, map[string]string{partOfLabel: "argocd"}
		return cm
	}
	secret := &corev1.Secret{Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"server.secretkey": []byte(randomHex(32))}}
	secret.Name, secret.Namespace, secret.Labels = secretName, Namespace, map[string]string{partOfLabel: "argocd"}
	rbac := meta(rbacConfigMapName)
	objs := []client.Object{&rbac, secret, defaultProject()}
	for name, data := range a.settings() {
		cm := meta(name)
		cm.Data = maps.Clone(data)
		if name == configMapName {
			maps.Copy(cm.Data, ext.ArgoCDCM)
		}
		objs = append(objs, &cm)
	}
	for _, o := range objs {
		if err := upsert(ctx, a.Client, o); err != nil {
			t.Fatalf("creating %s/%s: %v", Namespace, o.GetName(), err)
		}
	}
	if err := os.WriteFile(a.kubeconfig(), ext.KubeConfig, 0o600); err != nil {
		t.Fatal(err)
	}
}

// Dir is the directory of the processes' files and logs (removed when the test ends).
func (a *Argo) Dir() string { return a.dir }
