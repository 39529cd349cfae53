// Package argocd runs the real Argo CD controllers for tests: argocd-repo-server and
// argocd-application-controller (the multi-call binary hack/argocd.sh builds from the Go
// module proxy) with a Redis of their own, out of cluster, against a testenv API server,
// in the namespace argocd. Applications are then synced from a real Git server by Argo CD
// itself, so their status is Argo CD's own, not a guess at its shape. With
// Options.AgeIdentity, argocd-cmp-server runs beside the repo-server with the sops plugin
// operators install (deploy/argocd/sops-plugin.yaml, the sops CLI of hack/sops.sh), so
// SOPS-encrypted Secrets sync decrypted (cmp.go).
//
// What a deployed Argo CD takes from its ConfigMaps through env vars (argocd-cm,
// argocd-cmd-params-cm) is written to those ConfigMaps in the API server and handed to the
// processes as the same env vars (settings.go), so the ConfigMaps say what the processes
// run with. Flags are used only for what differs out of cluster: ports and the kubeconfig.
//
// Tests that need it run under `make e2e-argocd` (ARGOCD_TESTS=1), which builds Argo CD
// first, and skip with one line otherwise: CI does not build Argo CD yet (its cold build
// would not fit the CI run's time with the others; issue 48). With ARGOCD_TESTS=1 missing
// binaries or redis-server fail the test. Every helper fails the test on error: call them
// from the test's goroutine.
package argocd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
)

// Version is the Argo CD release hack/argocd.sh builds and this harness runs.
const Version = "v3.6.1"

// Namespace is where Argo CD runs: its ConfigMaps, Secrets, AppProjects and the
// Applications it reconciles live there.
const Namespace = "argocd"

// InClusterServer is the destination server of the cluster Argo CD runs in. Out of
// cluster it still means the testenv API server: ARGOCD_FAKE_IN_CLUSTER makes the
// controller read it from KUBECONFIG (controller.go).
const InClusterServer = "https://kubernetes.default.svc"

// Options tune the controllers for tests. The zero value is what the tests here use.
type Options struct {
	// Reconciliation is timeout.reconciliation (argocd-cm): how often the controller
	// refreshes every Application, and how long the repo-server trusts a branch's
	// resolved commit. Argo CD's default is 120 s (3 min for the commit), which would make
	// a test wait minutes for a push to show; 0 means 10 s. Refresh asks for one at once.
	Reconciliation time.Duration
	// LogLevel is the processes' log level (info, or debug to see every comparison).
	LogLevel string
	// AgeIdentity, an age identity (AGE-SECRET-KEY-1...), also runs argocd-cmp-server
	// with the sops plugin (cmp.go), which decrypts with it: Applications with
	// source.plugin.name SOPSPlugin then sync SOPS-encrypted Secrets. It needs the sops
	// CLI hack/sops.sh builds ($SOPS_BIN). Empty: no plugin runs.
	AgeIdentity string
}

// Argo is a running Argo CD, stopped when the test that started it ends.
type Argo struct {
	// Client talks to the API server Argo CD reconciles (testenv's uncached client):
	// Applications go through it as unstructured objects.
	Client client.Client
	// RepoServer and Redis are the loopback addresses of the repo-server and Redis.
	RepoServer, Redis string

	t       testing.TB
	dir     string // holds the kubeconfig, each process's files and logs
	bin     string // the directory hack/argocd.sh prints
	opts    Options
	procs   []*process
	stopped bool
}

// binDir is where to look for the binaries: $ARGOCD_BIN (the directory hack/argocd.sh
// prints on its last line), else the cache it builds into.
func binDir() string { return testenv.BinDir("ARGOCD_BIN", "argocd", Version) }

// binaries are the files hack/argocd.sh leaves in its directory that the harness runs,
// and whether each must be executable. The controllers are links to one binary, run under
// their own names; the repo-server runs helm and git-verify-wrapper.sh from PATH.
var binaries = []struct {
	name string
	exec bool
}{
	{"argocd-application-controller", true}, {"argocd-repo-server", true}, {"helm", true},
	{"git-verify-wrapper.sh", true}, {"crds/application-crd.yaml", false}, {"crds/appproject-crd.yaml", false},
}

// missing names the first of binaries absent from dir, or "" when all are there.
func missing(dir string) string {
	for _, b := range binaries {
		fi, err := os.Stat(filepath.Join(dir, b.name))
		if err != nil || fi.IsDir() || (b.exec && fi.Mode()&0o111 == 0) {
			return b.name
		}
	}
	return ""
}

// executable reports whether path is a file someone may run.
func executable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// Start runs Argo CD for the test against env: it installs the Application and AppProject
// CRDs of Version, creates the namespace argocd with what the controllers read there
// (settings.go), starts Redis, the sops plugin's argocd-cmp-server (with
// Options.AgeIdentity), the repo-server and the application controller, and waits until
// each answers. Everything is stopped (each process group: SIGTERM, then SIGKILL)
// when the test ends; if the test failed, the end of every log is printed first. Run one
// at a time against an API server: two would reconcile the same Applications.
func Start(t testing.TB, env *testenv.Env, opts Options) *Argo {
	t.Helper()
	bin, sopsDir, redis := preflight(t, &opts)
	testenv.Require(t, env)
	a := &Argo{Client: env.Client, t: t, dir: workDir(t), bin: bin, opts: opts}
	a.startAll(redis, sopsDir, func(ctx context.Context) { a.configure(ctx, env) })
	return a
}

// preflight skips the test without ARGOCD_TESTS, fails it when a binary Argo CD needs is
// missing (Argo CD's, redis-server, with Options.AgeIdentity the cmp-server and the sops
// CLI), and fills opts' defaults. It returns Argo CD's and sops' directories and
// redis-server's path.
func preflight(t testing.TB, opts *Options) (bin, sopsDir, redis string) {
	t.Helper()
	if os.Getenv("ARGOCD_TESTS") == "" {
		t.Skip("the Argo CD tests run under make e2e-argocd (ARGOCD_TESTS=1)")
	}
	bin = binDir()
	if m := missing(bin); m != "" {
		unavailable(t, fmt.Sprintf("argo cd %s: %s not found in %s (build it with hack/argocd.sh; ARGOCD_BIN names its directory)", Version, m, bin))
	}
	if opts.AgeIdentity != "" {
		if !executable(filepath.Join(bin, cmpServerName)) {
			unavailable(t, fmt.Sprintf("argo cd %s: %s not found in %s (build it with hack/argocd.sh; ARGOCD_BIN names its directory)", Version, cmpServerName, bin))
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
	if opts.Reconciliation == 0 {
		opts.Reconciliation = 10 * time.Second
	}
	if opts.LogLevel == "" {
		opts.LogLevel = "info"
	}
	return bin, sopsDir, redis
}

// startAll installs the CRDs, starts Redis, writes the settings (configure), then starts
// the cmp-server (with Options.AgeIdentity), the repo-server and the application
// controller, each waited for; all are stopped when the test ends.
func (a *Argo) startAll(redis, sopsDir string, configure func(ctx context.Context)) {
	a.t.Cleanup(a.stop)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a.installCRDs(ctx)
	a.Redis = a.startRedis(redis)
	a.RepoServer = freeAddr(a.t)
	configure(ctx)
	if a.opts.AgeIdentity != "" {
		a.startCMPServer(sopsDir)
	}
	a.startRepoServer()
	a.startController()
}

// unavailable fails the test: ARGOCD_TESTS asked for Argo CD.
func unavailable(t testing.TB, msg string) {
	t.Helper()
	t.Fatal(msg)
}

// workDir is a new directory for the processes' files, removed when the test ends. It is
// not t.TempDir: the repo-server's askpass socket must fit a Unix socket path (108 bytes),
// which a long test name under TMPDIR can exceed, and the repo-server makes its clone root
// write-only (0300), which t.TempDir's cleanup cannot list when not run as root.
func workDir(t testing.TB) string {
	dir, err := os.MkdirTemp("", "argocd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if d != nil && d.IsDir() {
				_ = os.Chmod(p, 0o700)
			}
			return nil
		})
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("removing %s: %v", dir, err)
		}
	})
	return dir
}

// path is a file or directory under the work directory, its parent created.
func (a *Argo) path(elem ...string) string {
	p := filepath.Join(append([]string{a.dir}, elem...)...)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		a.t.Fatal(err)
	}
	return p
}

// mkdir is a directory under the work directory, created.
func (a *Argo) mkdir(elem ...string) string {
	p := filepath.Join(append([]string{a.dir}, elem...)...)
	if err := os.MkdirAll(p, 0o755); err != nil {
		a.t.Fatal(err)
	}
	return p
}

// randomHex returns n random bytes, hex-encoded.
func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return hex.EncodeToString(b)
}
