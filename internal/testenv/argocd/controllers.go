package argocd

import (
	"net"
	"os"
	"path/filepath"
)

// The names the multi-call binary is run under; it picks its command by them.
const (
	repoServerName = "argocd-repo-server"
	controllerName = "argocd-application-controller"
)

// startRepoServer runs the repo-server, which clones Git repositories and renders their
// manifests for the controller, and waits until it serves gRPC. Flags:
//
//   - --address 127.0.0.1 --port: gRPC on loopback, on a port of the test's (the pod
//     listens on 0.0.0.0:8081);
//   - --metrics-address 127.0.0.1 --metrics-port: metrics and /healthz likewise (8084);
//     the address is a flag because its ConfigMap key does not reach this release:
//     the manifests set ARGOCD_REPO_SERVER_LISTEN_METRICS_ADDRESS, the binary reads
//     ARGOCD_REPO_SERVER_METRICS_LISTEN_ADDRESS.
//
// TLS stays on as deployed: with no certificate under ARGOCD_APP_CONF_PATH the repo-server
// makes a self-signed one, which the controller accepts without verifying, as in cluster
// without the argocd-repo-server-tls Secret. Env, beside the settings (envFrom):
//
//   - PATH: the harness's directory first, for the helm CLI Helm sources need and the
//     git-verify-wrapper.sh it runs for every commit (the image ships both), then the
//     test's, for git;
//   - HOME, TMPDIR, HELM_*_HOME: its own directories (the pod's home, /tmp emptyDir, where
//     it clones, and /helm-working-dir);
//   - ARGOCD_ASK_PASS_SOCK: the socket git asks credentials through; the default
//     /tmp/reposerver-ask-pass.sock is one per machine, not per repo-server;
//   - ARGOCD_GPG_ENABLED=false: no GnuPG keyring to verify commits with (the image has one;
//     Argo CD's own out-of-cluster Procfile turns it off the same way);
//   - ARGOCD_APP_CONF_PATH, ARGOCD_TLS_DATA_PATH, ARGOCD_SSH_DATA_PATH,
//     ARGOCD_REPO_SERVER_CLIENT_CA_PATH: empty directories where the pod mounts its TLS
//     Secret and the argocd-tls-certs-cm and argocd-ssh-known-hosts-cm ConfigMaps, and
//     an absent client CA (no mTLS), instead of paths under /app/config;
//   - ARGOCD_PLUGINSOCKFILEPATH: the directory where config-management plugins' sockets
//     are (the pod's plugins volume, shared with argocd-cmp-server sidecars): empty, or
//     holding the sops plugin's with Options.AgeIdentity (cmp.go).
func (a *Argo) startRepoServer() {
	t := a.t
	t.Helper()
	_, port, _ := net.SplitHostPort(a.RepoServer)
	metrics := freeAddr(t)
	_, metricsPort, _ := net.SplitHostPort(metrics)
	home := a.mkdir(repoServerName, "home")
	conf := a.mkdir(repoServerName, "config")
	env := append(a.processEnv(repoServerName),
		"PATH="+a.bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"HOME="+home,
		"TMPDIR="+a.mkdir(repoServerName, "tmp"),
		"HELM_CACHE_HOME="+a.mkdir(repoServerName, "helm"),
		"HELM_CONFIG_HOME="+a.mkdir(repoServerName, "helm"),
		"HELM_DATA_HOME="+a.mkdir(repoServerName, "helm"),
		"ARGOCD_ASK_PASS_SOCK="+a.path(repoServerName, "askpass.sock"),
		"ARGOCD_GPG_ENABLED=false",
		"ARGOCD_APP_CONF_PATH="+conf,
		"ARGOCD_TLS_DATA_PATH="+a.mkdir(repoServerName, "config", "tls"),
		"ARGOCD_SSH_DATA_PATH="+a.mkdir(repoServerName, "config", "ssh"),
		"ARGOCD_REPO_SERVER_CLIENT_CA_PATH="+filepath.Join(conf, "reposerver", "mtls", "client-ca.crt"),
		"ARGOCD_PLUGINSOCKFILEPATH="+a.pluginsDir(),
	)
	p := a.launch(repoServerName, filepath.Join(a.bin, repoServerName), []string{
		"--address", "127.0.0.1", "--port", port,
		"--metrics-address", "127.0.0.1", "--metrics-port", metricsPort,
	}, env)
	// full=true makes it call its own gRPC health service: up, not just listening.
	a.waitHTTP(p, "http://"+metrics+"/healthz?full=true")
}

// startController runs the application controller, which compares each Application with
// what the repo-server renders, syncs it and writes its status, and waits until its
// /healthz answers. Flags:
//
//   - --kubeconfig: the API server it watches Applications in (the pod uses its service
//     account);
//   - --namespace argocd: where its Applications, AppProjects and settings are (the pod's
//     own namespace);
//   - --metrics-port: metrics and /healthz on a port of the test's (8082); it binds all
//     addresses, and no flag narrows that.
//
// Env, beside the settings (envFrom):
//
//   - ARGOCD_FAKE_IN_CLUSTER=true with KUBECONFIG: the destination InClusterServer
//     (https://kubernetes.default.svc) resolves through KUBECONFIG instead of the pod's
//     service account, as Argo CD's own out-of-cluster Procfile runs it. No cluster
//     Secret is needed for the in-cluster destination, and none is created;
//   - HOME, TMPDIR, KUBECACHEDIR: its own directories (the pod's /tmp/kubecache holds its
//     discovery cache).
func (a *Argo) startController() {
	t := a.t
	t.Helper()
	metrics := freeAddr(t)
	_, metricsPort, _ := net.SplitHostPort(metrics)
	env := append(a.processEnv(controllerName),
		"PATH="+os.Getenv("PATH"),
		"KUBECONFIG="+a.kubeconfig(),
		"ARGOCD_FAKE_IN_CLUSTER=true",
		"HOME="+a.mkdir(controllerName, "home"),
		"TMPDIR="+a.mkdir(controllerName, "tmp"),
		"KUBECACHEDIR="+a.mkdir(controllerName, "kubecache"),
	)
	p := a.launch(controllerName, filepath.Join(a.bin, controllerName), []string{
		"--kubeconfig", a.kubeconfig(), "--namespace", Namespace, "--metrics-port", metricsPort,
	}, env)
	a.waitHTTP(p, "http://"+metrics+"/healthz")
}
