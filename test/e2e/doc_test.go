//go:build e2e

// Package e2e runs magnum-gitops end to end through the real Flux controllers: a real etcd
// and kube-apiserver with the Flux, Cluster API, CAPO and addon CRDs, Flux's
// source-, kustomize- and helm-controller as processes (built by hack/flux.sh), a Git
// smart-HTTP server (git http-backend) and a Helm chart repository serving the
// openstack-cluster chart packages, all on 127.0.0.1. Flux is pointed at the repository
// with the manifests an operator applies (deploy/flux), and `magnum-gitops serve`, a
// subprocess, commits the events POSTed to it and runs its leader loops against the API
// server. The tests then assert what Flux made of each commit in the API server, and what
// `magnum-gitops status` reads back; no CAPI controller runs, the tests play its part.
//
// Run:
//
//	KUBEBUILDER_ASSETS=$(hack/testbin.sh | tail -1) FLUX_BIN=$(hack/flux.sh | tail -1) \
//	  go test -tags e2e ./test/e2e -count=1 -timeout 40m -v
//
// Without ../shared or the binaries the tests skip, or fail when CI is set. The scenario
// runs once with a reconcile requested after each push; E2E_FULL=1 runs it again relying
// on the GitRepository interval (about a minute more per step). TestE2EScale (make
// e2e-scale, E2E_SCALE=1) compares repository layouts with thousands of clusters.
package e2e

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMain removes the magnum-gitops binary the tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	if buildResult != "" {
		os.RemoveAll(filepath.Dir(buildResult))
	}
	os.Exit(code)
}
