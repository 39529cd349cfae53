//go:build image

// Package image runs the magnum-gitops image as a container runtime would: the OCI layout
// `make image` writes (bin/image/oci, or MAGNUM_GITOPS_IMAGE), this machine's platform's
// manifest unpacked into a root filesystem, and a real OCI runtime from Debian (runc, or
// OCI_RUNTIME=crun) running it non-root, with no capabilities, on a read-only root
// filesystem, its configuration and Secrets bind-mounted read-only as files, on the host's
// network so that it reaches the test's API server (envtest) and Git server on loopback.
//
// crun 1.8 (Debian 12) refuses a machine whose cgroups are v1 with a controller left on
// v2 (hybrid mode), as the 2-core test machines are: runc runs there, crun where cgroups are
// v2 alone.
//
// Run:
//
//	make e2e-image
//
// or make image && KUBEBUILDER_ASSETS=$(hack/testbin.sh | tail -1) go test -tags image
// ./test/image -count=1 -v (as root). Without the layout, the runtime, root or the API
// server's binaries the tests skip, or fail when CI is set.
package image
