package kube_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/status/kube"
)

// TestRESTConfigRate: a client of a kubeconfig sends Flux's default rate, not client-go's
// 5 requests a second, which made migrate wait on its own limiter.
func TestRESTConfigRate(t *testing.T) {
	t.Parallel()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	doc := `apiVersion: v1
kind: Config
clusters: [{name: m, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: m, user: u}}]
current-context: c
`
	if err := os.WriteFile(kubeconfig, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := kube.RESTConfig(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.QPS != 50 || cfg.Burst != 300 {
		t.Errorf("QPS %v, burst %d; want 50, 300 (flux's --kube-api-qps, --kube-api-burst)", cfg.QPS, cfg.Burst)
	}
}
