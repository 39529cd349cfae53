package main

import (
	"embed"
	"io/fs"
	"path"
	"sort"
	"time"
)

// What the image holds and how it runs, in one place: the OCI layout, the directory tree
// the Dockerfile copies (--rootfs) and the tests all read it from here, so the image built
// without a daemon and the one Docker builds cannot drift apart.
const (
	// binaryPath is where the binary lands and what the image runs.
	binaryPath = "/usr/local/bin/magnum-gitops"
	// caPath is where Go's crypto/x509 looks first on Linux: no SSL_CERT_FILE needed,
	// though it is set so that an operator sees where the bundle is.
	caPath = "/etc/ssl/certs/ca-certificates.crt"
	// configPath is where the Deployment mounts the configuration.
	configPath = "/etc/magnum-gitops/config.yaml"
	// imageUser is distroless's nonroot, which the Deployment's securityContext names.
	imageUser = "65532:65532"
	// defaultSource is the repository the image is built from (a label).
	defaultSource = "https://github.com/magnum-gitops/magnum-gitops"
)

// The process the image starts. With no arguments it serves with the configuration where
// the Deployment mounts it, so a run without that file stops at once, naming it.
var (
	entrypoint = []string{binaryPath}
	defaultCmd = []string{"serve", "--config", configPath}
	imageEnv   = []string{"PATH=/usr/local/bin", "SSL_CERT_FILE=" + caPath}
)

// labels are the image's OCI annotations (org.opencontainers.image.*), in its
// configuration and on its index.
func labels(version, revision, source string, created time.Time) map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":    "magnum-gitops",
		"org.opencontainers.image.version":  version,
		"org.opencontainers.image.revision": revision,
		"org.opencontainers.image.created":  created.UTC().Format(time.RFC3339),
		"org.opencontainers.image.source":   source,
		"org.opencontainers.image.licenses": "Apache-2.0",
	}
}

// userFiles are /etc/passwd and /etc/group: root and nonroot (65532), nothing else. Kept as
// files beside this program so a reader sees them whole.
//
//go:embed rootfs/etc/passwd rootfs/etc/group
var userFiles embed.FS

// entry is one file or directory of a layer. Every entry belongs to root: the image's
// user reads and runs them, and writes nothing but /tmp.
type entry struct {
	path string      // absolute path in the image
	mode fs.FileMode // permission bits, with fs.ModeDir and fs.ModeSticky
	data []byte      // a file's contents; nil for a directory
}

// baseEntries are the files every platform shares: CA certificates, users and groups, and
// a /tmp anyone may write (a read-only root filesystem mounts its own there).
func baseEntries(caCerts []byte) ([]entry, error) {
	passwd, err := userFiles.ReadFile("rootfs/etc/passwd")
	if err != nil {
		return nil, err
	}
	group, err := userFiles.ReadFile("rootfs/etc/group")
	if err != nil {
		return nil, err
	}
	return withParents([]entry{
		{path: "/etc/passwd", mode: 0o644, data: passwd},
		{path: "/etc/group", mode: 0o644, data: group},
		{path: caPath, mode: 0o644, data: caCerts},
		{path: "/tmp", mode: fs.ModeDir | fs.ModeSticky | 0o777},
	}), nil
}

// binaryEntries is the layer of one platform: the binary.
func binaryEntries(bin []byte) []entry {
	return withParents([]entry{{path: binaryPath, mode: 0o755, data: bin}})
}

// withParents adds every missing parent directory (0755) and sorts by path, so a parent
// always precedes its children and the same files give the same order.
func withParents(entries []entry) []entry {
	have := map[string]bool{}
	for _, e := range entries {
		have[e.path] = true
	}
	out := append([]entry(nil), entries...)
	for _, e := range entries {
		for dir := path.Dir(e.path); dir != "/" && !have[dir]; dir = path.Dir(dir) {
			have[dir] = true
			out = append(out, entry{path: dir, mode: fs.ModeDir | 0o755})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out
}
