package argocd

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

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
	// PluginFile, when set, is the ConfigMap holding the sops plugin's plugin.yaml that
	// argocd-cmp-server runs, in place of deploy/argocd/sops-plugin.yaml as shipped (a test
	// that must run a plugin other than the shipped one says why).
	PluginFile string
}

// StartOn is Start against an External API server: the same processes, settings and
// checks (ARGOCD_TESTS, the binaries, redis-server, the sops CLI with
// Options.AgeIdentity), with argocd-cm holding ext.ArgoCDCM too. Everything is stopped
// when the test ends. ext.Path reaches the repo-server through the test's PATH, which it
// sets (t.Setenv): not for parallel tests.
func StartOn(t testing.TB, ext External, opts Options) *Argo {
	t.Helper()
	if os.Getenv("ARGOCD_TESTS") == "" {
		t.Skip("the Argo CD tests run under make e2e-argocd (ARGOCD_TESTS=1)")
	}
	dir := binDir()
	if m := missing(dir); m != "" {
		unavailable(t, fmt.Sprintf("argo cd %s: %s not found in %s (build it with hack/argocd.sh; ARGOCD_BIN names its directory)", Version, m, dir))
	}
	var sopsDir string
	if opts.AgeIdentity != "" {
		if !executable(filepath.Join(dir, cmpServerName)) {
			unavailable(t, fmt.Sprintf("argo cd %s: %s not found in %s (build it with hack/argocd.sh; ARGOCD_BIN names its directory)", Version, cmpServerName, dir))
		}
		sopsDir = sopsBinDir()
		if !executable(filepath.Join(sopsDir, "sops")) {
			unavailable(t, fmt.Sprintf("sops %s not found in %q (build it with hack/sops.sh; SOPS_BIN names its directory)", SOPSVersion, sopsDir))
		}
	}
	redis, err := exec.LookPath("redis-server")
	if err != nil {
		unavailable(t, "redis-server not found (apt-get install -y redis-server)")
	}
	if ext.Path != "" {
		t.Setenv("PATH", ext.Path+string(os.PathListSeparator)+os.Getenv("PATH"))
	}
	if opts.Reconciliation == 0 {
		opts.Reconciliation = 10 * time.Second
	}
	if opts.LogLevel == "" {
		opts.LogLevel = "info"
	}
	a := &Argo{Client: ext.Client, t: t, dir: workDir(t), bin: dir, opts: opts}
	t.Cleanup(a.stop)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a.installCRDs(ctx)
	a.Redis = a.startRedis(redis)
	a.RepoServer = freeAddr(t)
	a.configureOn(ctx, ext)
	if opts.AgeIdentity != "" {
		if ext.PluginFile != "" {
			a.startCMPServerFrom(sopsDir, ext.PluginFile)
		} else {
			a.startCMPServer(sopsDir)
		}
	}
	a.startRepoServer()
	a.startController()
	return a
}

// startCMPServerFrom is startCMPServer with the plugin of the ConfigMap in file.
func (a *Argo) startCMPServerFrom(sopsDir, file string) {
	t := a.t
	t.Helper()
	plugin, err := pluginConfig(file, SOPSPlugin)
	if err != nil {
		t.Fatal(err)
	}
	confDir := a.mkdir(cmpServerName, "config")
	if err := os.WriteFile(filepath.Join(confDir, pluginKey), plugin.raw, 0o644); err != nil {
		t.Fatal(err)
	}
	keyFile := a.path(cmpServerName, "sops-age", "age.agekey")
	if err := os.WriteFile(keyFile, []byte(a.opts.AgeIdentity+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(a.pluginsDir(), SOPSPlugin+".sock")
	env := []string{
		"PATH=" + sopsDir + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME=" + a.mkdir(cmpServerName, "home"),
		"TMPDIR=" + a.mkdir(cmpServerName, "tmp"),
		"ARGOCD_CMP_WORKDIR=" + a.mkdir(cmpServerName, "work"),
		"ARGOCD_PLUGINSOCKFILEPATH=" + a.pluginsDir(),
		"ARGOCD_CMP_SERVER_LOGFORMAT=text",
		"ARGOCD_CMP_SERVER_LOGLEVEL=info",
		"SOPS_AGE_KEY_FILE=" + keyFile,
	}
	p := a.launch(cmpServerName, filepath.Join(a.bin, cmpServerName), []string{"--config-dir-path", confDir}, env)
	a.waitSocket(p, sock)
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
