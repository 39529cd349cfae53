//go:build e2e

// Package e2e runs magnum-gitops end to end through the real Flux controllers and, for the
// ClusterAPI tests, the real Cluster API controllers: a real etcd and kube-apiserver with
// the Flux, Cluster API, CAPO and addon CRDs, Flux's source-, kustomize- and
// helm-controller as processes (built by hack/flux.sh), a Git smart-HTTP server (git
// http-backend) and a Helm chart repository serving the openstack-cluster chart packages,
// all on 127.0.0.1. Flux is pointed at the repository with the manifests an operator
// applies (deploy/flux), and `magnum-gitops serve`, a subprocess, commits the events POSTed
// to it and runs its leader loops against the API server.
//
// The TestE2EClusterAPI* tests add Cluster API v1.14.2's core, kubeadm bootstrap, kubeadm
// control plane and CAPD managers with their webhooks and CRD conversion, and
// kube-controller-manager's garbage collector (built by hack/capi.sh); site post-renderers
// (fixtures/postrenderers/capd-inmemory.yaml) put the chart's clusters on CAPD's in-memory
// backend, which simulates machines, etcd members, API servers and nodes. Only the addon
// provider is played by the tests (it installs into workload clusters, which the in-memory
// backend does not run). The other tests play CAPI's part themselves.
//
// As root the tests run in a network namespace of their own (netns_test.go): CAPD's
// in-memory backend listens on fixed ports of every address.
//
// Run:
//
//	make e2e
//
// or KUBEBUILDER_ASSETS=$(hack/testbin.sh | tail -1) FLUX_BIN=$(hack/flux.sh | tail -1) \
// CAPI_BIN=$(hack/capi.sh | tail -1) go test -tags e2e ./test/e2e -count=1 -timeout 60m -v
//
// Without ../shared or the binaries the tests skip, or fail when CI is set. The scenario
// runs once with a reconcile requested after each push; E2E_FULL=1 runs it again relying
// on the GitRepository interval (about a minute more per step). TestE2EScale (make
// e2e-scale, E2E_SCALE=1) compares repository layouts with thousands of clusters;
// E2E_CAPI_FLEET=1,10,50 measures fleets created together on the real Cluster API
// controllers; E2E_RECORD_DIR=dir keeps the states the real controllers went through in the
// format of fixtures/status.
package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestMain runs the tests in a network namespace of their own when it can (netns_test.go),
// and removes the magnum-gitops binary the tests built.
func TestMain(m *testing.M) {
	if code, ok := reexecInNetns(); ok {
		os.Exit(code)
	}
	if inPrivateNetwork() {
		if err := loopbackUp(); err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
			os.Exit(1)
		}
	}
	code := m.Run()
	if buildResult != "" {
		os.RemoveAll(filepath.Dir(buildResult))
	}
	os.Exit(code)
}
