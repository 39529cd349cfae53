//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"debug/buildinfo"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"filippo.io/age"
	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/go-logr/logr/funcr"
	"helm.sh/helm/v3/pkg/repo"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/gitrepo"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv/argocd"
	"github.com/magnum-gitops/magnum-gitops/magnum"
)

// The Flux controllers hack/flux.sh builds; their CRDs are installed from the same modules.
const (
	sourceControllerVersion    = "v1.9.6"
	kustomizeControllerVersion = "v1.9.5"
	helmControllerVersion      = "v1.6.4"
)

// Names of the deploy/flux objects and of the Secrets the test creates for them.
const (
	fluxNamespace   = "flux-system"
	sourceName      = "magnum-clusters" // GitRepository and Kustomization
	gitSecretName   = "magnum-clusters-git"
	ageSecretName   = "sops-age"
	gitUser         = "magnum-gitops"
	repoName        = "magnum-clusters.git"
	fluxPath        = "clusters/magnum"
	serveNamespace  = "magnum-gitops" // serve's leader election Lease
	defaultWaitStep = 5 * time.Minute
)

var (
	gvkGitRepository  = schema.GroupVersionKind{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "GitRepository"}
	gvkHelmRepository = schema.GroupVersionKind{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "HelmRepository"}
	gvkHelmChart      = schema.GroupVersionKind{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "HelmChart"}
	gvkKustomization  = schema.GroupVersionKind{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Kind: "Kustomization"}
	gvkHelmRelease    = schema.GroupVersionKind{Group: "helm.toolkit.fluxcd.io", Version: "v2", Kind: "HelmRelease"}
)

// binaries are the prebuilt pieces the harness runs.
type binaries struct {
	assets   string // kube-apiserver and etcd (KUBEBUILDER_ASSETS)
	flux     string // the controllers and their CRDs (FLUX_BIN)
	magnum   string // bin/magnum-gitops
	shared   string // ../shared
	gitHTTP  string // git-http-backend
	fluxCRDs []string
}

func (b *binaries) controller(name, version string) string {
	return filepath.Join(b.flux, name+"-"+version)
}

// unavailable skips the test, or fails it when CI is set: CI must run the end-to-end tests.
func unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") != "" {
		t.Fatalf("CI is set and %s", msg)
	}
	t.Skipf("skipping: %s", msg)
}

var (
	buildOnce   sync.Once
	buildResult string
	buildErr    error
)

// findBinaries locates everything the harness needs, building bin/magnum-gitops once per
// test binary. It skips when ../shared or a binary is missing, and fails instead when CI
// is set: CI must never pass by skipping the end-to-end tests.
func findBinaries(t *testing.T) *binaries {
	t.Helper()
	shared, err := testenv.SharedDir()
	if err != nil {
		unavailable(t, "../shared (chart packages, CRDs) is missing beside the checkout: %v", err)
	}
	b := &binaries{shared: shared}

	b.assets = os.Getenv("KUBEBUILDER_ASSETS")
	if b.assets == "" {
		b.assets = newestDir(filepath.Join(cacheHome(), "magnum-gitops", "testbin"))
	}
	for _, f := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(b.assets, f)); err != nil || b.assets == "" {
			unavailable(t, "%s is missing (KUBEBUILDER_ASSETS=%q): run hack/testbin.sh", f, b.assets)
		}
	}

	b.flux = os.Getenv("FLUX_BIN")
	if b.flux == "" {
		b.flux = filepath.Join(cacheHome(), "magnum-gitops", "flux")
	}
	for _, c := range [][2]string{{"source-controller", sourceControllerVersion},
		{"kustomize-controller", kustomizeControllerVersion}, {"helm-controller", helmControllerVersion}} {
		if _, err := os.Stat(b.controller(c[0], c[1])); err != nil {
			unavailable(t, "%s %s is missing in FLUX_BIN=%q: run hack/flux.sh", c[0], c[1], b.flux)
		}
		dir := filepath.Join(b.flux, "crds", c[0]+"-"+c[1])
		if m, _ := filepath.Glob(filepath.Join(dir, "*.yaml")); len(m) == 0 {
			unavailable(t, "the CRDs of %s %s are missing in %s: run hack/flux.sh", c[0], c[1], dir)
		}
		b.fluxCRDs = append(b.fluxCRDs, dir)
	}

	gitPath, err := exec.LookPath("git")
	if err != nil {
		unavailable(t, "git is not installed")
	}
	out, err := exec.Command(gitPath, "--exec-path").Output()
	if err != nil {
		unavailable(t, "git --exec-path: %v", err)
	}
	b.gitHTTP = filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	if _, err := os.Stat(b.gitHTTP); err != nil {
		unavailable(t, "git-http-backend is missing: %v", err)
	}

	b.magnum = os.Getenv("MAGNUM_GITOPS_BIN")
	if b.magnum == "" {
		buildOnce.Do(func() {
			dir, err := os.MkdirTemp("", "magnum-gitops-e2e-bin-")
			if err != nil {
				buildErr = err
				return
			}
			buildResult = filepath.Join(dir, "magnum-gitops")
			cmd := exec.Command("go", "build", "-o", buildResult, "./cmd/magnum-gitops")
			cmd.Dir = testenv.RepoRoot()
			cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local")
			if out, err := cmd.CombinedOutput(); err != nil {
				buildErr = fmt.Errorf("go build ./cmd/magnum-gitops: %v\n%s", err, out)
			}
		})
		if buildErr != nil {
			t.Fatal(buildErr)
		}
		b.magnum = buildResult
	}
	return b
}

func cacheHome() string {
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return d
	}
	h, _ := os.UserHomeDir()
	return filepath.Join(h, ".cache")
}

// newestDir is the last entry of dir in version order, or "".
func newestDir(dir string) string {
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) == 0 {
		return ""
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Slice(names, func(i, j int) bool { return versionLess(names[i], names[j]) })
	return filepath.Join(dir, names[len(names)-1])
}

func versionLess(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(pa) && i < len(pb); i++ {
		var x, y int
		_, ex := fmt.Sscanf(pa[i], "%d", &x)
		_, ey := fmt.Sscanf(pb[i], "%d", &y)
		if ex != nil || ey != nil {
			if pa[i] != pb[i] {
				return pa[i] < pb[i]
			}
			continue
		}
		if x != y {
			return x < y
		}
	}
	return len(pa) < len(pb)
}

// envtest and controller-runtime log through one global logger, into the current
// harness's envtest.log.
var (
	setLoggerOnce sync.Once
	envtestLog    atomic.Pointer[os.File]
)

// harness is one complete environment: API server, Flux, Git and chart servers.
type harness struct {
	t      *testing.T
	bin    *binaries
	work   string // removed at the end
	logDir string // kept when the test fails
	ctx    context.Context

	env        *envtest.Environment
	c          client.Client
	kubeconfig string

	gitURL      string
	gitDir      string // the bare repository on disk
	gitPassword string
	gitRequests atomic.Int64
	// gitBytes counts the bytes the Git server sent: what Flux fetched (scale_test.go).
	gitBytes atomic.Int64

	chartURL      string
	chartRequests atomic.Int64

	ageIdentity *age.X25519Identity
	config      string // magnum-gitops --config

	// magnum-gitops serve: its API address and bearer token.
	serveURL   string
	serveToken string
	serveProc  *process

	procs []*process
	// requestReconcile configures serve to annotate the GitRepository after every push
	// (serve.reconcile_request).
	requestReconcile bool
	// valuesOverlay is the configuration's values_overlay (site values over every cluster).
	valuesOverlay map[string]any
	// perNamespace runs the per-namespace layout (flux.layout: per-namespace, the root of
	// deploy/flux/per-namespace); the default is the single Kustomization of deploy/flux.
	perNamespace bool
	// branchPerNamespace runs the branch-per-namespace layout: perNamespace, with each
	// namespace (and the root's flux/ and sources/) on a published branch of its own,
	// which serve publishes from its start.
	branchPerNamespace bool
	published          *gitrepo.Repo // publisher()
	// The scale test's settings (scale_test.go): a pre-rendered tree in the seed commit,
	// an adjustment of the root Kustomization, how many Kustomizations apply the seed, no
	// serve, a longer first sync.
	seedTree           string
	adjustRoot         func(root *unstructured.Unstructured)
	wantKustomizations int
	noServe            bool
	seedTimeout        time.Duration
	// clusterAPI runs the real Cluster API controllers (capi_harness_test.go), with the
	// chart's clusters put on CAPD's in-memory backend by site post-renderers whose
	// simulated machines take capiStartup to come up; capi is set once they are prepared.
	clusterAPI  bool
	capiStartup time.Duration
	capi        *capiCluster
	// hostNetwork runs the Cluster API controllers in the host's network namespace, for
	// processes outside this test that must reach them on loopback; nothing else may run
	// CAPD's in-memory API servers on the host meanwhile.
	hostNetwork bool
	// postRenderers are the site post-renderers of the configuration, for installing the
	// chart as the driver would on the same site (adoption_test.go).
	postRenderers []helmv2.PostRenderer
	// fluxPath is the directory this management cluster's Kustomization applies: the
	// configuration's flux.path, or one management cluster's path (regions_test.go).
	fluxPath string
	// review runs serve in review mode against a real Gitea (review_test.go): the
	// repository is Gitea's, serve pushes and opens pull requests as its bot.
	review *reviewSetup
	// argo runs real Argo CD instead of Flux (argocd_harness_test.go): serve writes format
	// argo, the parent Application of deploy/argocd syncs the repository through the sops
	// plugin, and the clusters' Applications deploy the chart; argoCD is set once it runs.
	argo   bool
	argoCD *argocd.Argo
}

// harnessOption adjusts a harness before it starts.
type harnessOption func(*harness)

// withValuesOverlay sets the configuration's values_overlay.
func withValuesOverlay(v map[string]any) harnessOption {
	return func(h *harness) { h.valuesOverlay = v }
}

// withClusterAPI runs the real Cluster API controllers; each simulated machine takes
// startup to come up.
func withClusterAPI(startup time.Duration) harnessOption {
	return func(h *harness) { h.clusterAPI, h.capiStartup = true, startup }
}

// withExternalGit makes Flux (and serve) use a Git remote someone else serves: its URL,
// the password of gitUser, and its bare repository on this machine (seeded here when it
// has no main yet).
func withExternalGit(url, password, bareRepo string) harnessOption {
	return func(h *harness) { h.gitURL, h.gitPassword, h.gitDir = url, password, bareRepo }
}

// withAgeIdentity makes Flux decrypt with a given age identity (serve encrypts to it).
func withAgeIdentity(id *age.X25519Identity) harnessOption {
	return func(h *harness) { h.ageIdentity = id }
}

// withHostNetwork lets the Cluster API controllers run without a network namespace of
// their own (see harness.hostNetwork).
func withHostNetwork() harnessOption {
	return func(h *harness) { h.hostNetwork = true }
}

// withoutServe starts no serve: the caller runs its own.
func withoutServe() harnessOption {
	return func(h *harness) { h.noServe = true }
}

// withFluxPath makes the Kustomization apply path rather than fluxPath.
func withFluxPath(path string) harnessOption {
	return func(h *harness) { h.fluxPath = path }
}

// withPerNamespaceLayout runs the per-namespace layout.
func withPerNamespaceLayout() harnessOption {
	return func(h *harness) { h.perNamespace = true }
}

// withBranchPerNamespaceLayout runs the branch-per-namespace layout.
func withBranchPerNamespaceLayout() harnessOption {
	return func(h *harness) { h.perNamespace, h.branchPerNamespace = true, true }
}

// newHarness starts everything and returns once Flux has applied the seed commit.
func newHarness(t *testing.T, b *binaries, requestReconcile bool, opts ...harnessOption) *harness {
	t.Helper()
	h := &harness{t: t, bin: b, work: t.TempDir(), ctx: t.Context(), requestReconcile: requestReconcile, fluxPath: fluxPath}
	for _, o := range opts {
		o(h)
	}
	var err error
	h.logDir, err = os.MkdirTemp("", "magnum-gitops-e2e-logs-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			os.RemoveAll(h.logDir)
		}
	})
	start := time.Now()
	if h.clusterAPI {
		h.prepareCAPI()
	}
	h.startAPIServer()
	if h.capi != nil {
		h.startCAPI()
	}
	h.startChartServer()
	if h.gitURL == "" {
		h.startGitServer()
	} else {
		h.seedRepository()
	}
	h.writeMagnumConfig()
	if h.argo {
		h.startArgoCD()
	} else {
		h.startFlux()
	}
	// Registered last, so it runs first: while the API server and the controllers still run.
	t.Cleanup(h.dumpOnFailure)
	if h.argo {
		h.applyArgoParent()
	} else {
		h.applyDeployManifests()
	}
	seed := h.headRevision()
	if h.seedTimeout == 0 {
		h.seedTimeout = 3 * time.Minute
	}
	parts := "API server, Flux controllers, Git and chart servers"
	if h.argo {
		parts = "API server, Argo CD " + argocd.Version + " (application controller, repo-server with kustomize and helm, sops plugin), Git and chart servers"
	}
	if h.capi != nil {
		parts += ", Cluster API " + capiVersion + " controllers (in-memory infrastructure)"
	}
	if h.branchPerNamespace && !h.noServe {
		// The root follows a branch serve publishes when it starts.
		h.startServe()
		parts += ", magnum-gitops serve"
	}
	if h.branchPerNamespace && h.noServe {
		if err := h.publisher().Publish(h.ctx, h.gitFiles(h.fluxPath)...); err != nil {
			t.Fatalf("publishing the seed's branches: %v", err)
		}
	}
	if h.argo {
		h.waitArgoSynced(h.argoRootRevision(seed), h.seedTimeout)
	} else if h.wantKustomizations == 0 {
		h.waitApplied(seed, h.seedTimeout)
	} else {
		h.waitAllApplied(seed, h.seedTimeout)
	}
	if !h.noServe && !h.branchPerNamespace {
		h.startServe()
		parts += ", magnum-gitops serve"
	}
	t.Logf("harness ready in %s (%s; seed %s applied)", time.Since(start).Round(time.Millisecond), parts, seed[:12])
	return h
}

// ---------------------------------------------------------------------------------------
// API server

func (h *harness) startAPIServer() {
	t := h.t
	crds, err := testenv.LoadCRDs()
	if err != nil {
		t.Fatalf("loading the CRDs: %v", err)
	}
	// Flux's CRDs come from the controllers that run here, not from go.mod's API modules.
	// With the real Cluster API controllers, their providers' CRDs replace testenv's.
	kept := crds[:0]
	for _, c := range crds {
		if !strings.HasSuffix(c.Spec.Group, ".toolkit.fluxcd.io") && (h.capi == nil || !h.capi.provides(c.Spec.Group, c.Spec.Names.Kind)) {
			kept = append(kept, c)
		}
	}

	envtestLog.Store(h.logFile("envtest"))
	setLoggerOnce.Do(func() {
		ctrllog.SetLogger(funcr.New(func(prefix, args string) {
			if f := envtestLog.Load(); f != nil {
				fmt.Fprintln(f, time.Now().Format(time.RFC3339Nano), prefix, args)
			}
		}, funcr.Options{Verbosity: 1}))
	})
	apiLog := h.logFile("kube-apiserver")
	etcdLog := h.logFile("etcd")
	env := &envtest.Environment{
		BinaryAssetsDirectory: h.bin.assets,
		CRDs:                  kept,
		CRDDirectoryPaths:     h.bin.fluxCRDs,
		ErrorIfCRDPathMissing: true,
		// The machine is shared: allow a slow start rather than fail on load.
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	api := env.ControlPlane.GetAPIServer()
	// On loopback the endpoint reconciler cannot publish 127.0.0.1 for the kubernetes Service.
	api.Configure().Set("endpoint-reconciler-type", "none")
	// In the tests' network namespace there is no default route to find an address by.
	api.Configure().Set("advertise-address", "127.0.0.1")
	// Explicit paths: envtest prefers KUBEBUILDER_ASSETS even when it is set but empty.
	api.Path = filepath.Join(h.bin.assets, "kube-apiserver")
	api.Out, api.Err = apiLog, apiLog
	env.ControlPlane.Etcd = &envtest.Etcd{Path: filepath.Join(h.bin.assets, "etcd"), Out: etcdLog, Err: etcdLog}
	cfg, err := env.Start()
	if err != nil {
		h.printLogs()
		t.Fatalf("starting the API server: %v", err)
	}
	h.env = env
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Logf("stopping the API server: %v", err)
		}
	})
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	// The chart writes v1beta1 Cluster API objects, which the API server answers with a
	// deprecation warning on every read.
	cfg = rest.CopyConfig(cfg)
	cfg.WarningHandlerWithContext = rest.NoWarnings{}
	h.c, err = client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	u, err := env.AddUser(envtest.User{Name: "flux-e2e", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := u.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	if h.capi != nil {
		h.installCAPICRDs(cfg)
	}
	h.kubeconfig = filepath.Join(h.work, "kubeconfig")
	if err := os.WriteFile(h.kubeconfig, kc, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{fluxNamespace, serveNamespace} {
		if err := h.c.Create(h.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
}

// ---------------------------------------------------------------------------------------
// Git smart-HTTP server with basic auth, holding one bare repository

func (h *harness) startGitServer() {
	root := filepath.Join(h.work, "git")
	h.gitDir = filepath.Join(root, repoName)
	h.git("", "init", "-q", "--bare", "-b", "main", h.gitDir)
	h.git(h.gitDir, "config", "http.receivepack", "true")
	h.git(h.gitDir, "config", "core.logAllRefUpdates", "always")
	h.gitPassword = randomToken()
	logf := h.logFile("git-http")
	var logMu sync.Mutex
	backend := &cgi.Handler{Path: h.bin.gitHTTP, Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"},
		Stderr: logf}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.gitRequests.Add(1)
		u, p, ok := r.BasicAuth()
		logMu.Lock()
		fmt.Fprintf(logf, "%s %s %s?%s user=%q\n", time.Now().Format(time.RFC3339Nano), r.Method, r.URL.Path, r.URL.RawQuery, u)
		logMu.Unlock()
		if !ok || u != gitUser || p != h.gitPassword {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		backend.ServeHTTP(countingWriter{w, &h.gitBytes}, r)
	})
	h.gitURL = "http://" + h.serve("git", handler) + "/" + repoName
	// After the server is up, because a seed tree names its URL.
	h.seedRepository()
}

// countingWriter counts the bytes of a response.
type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (c countingWriter) Write(b []byte) (int, error) {
	n, err := c.ResponseWriter.Write(b)
	c.n.Add(int64(n))
	return n, err
}

// seedRepository gives main a README and the (empty) Flux path, so that the Kustomization
// is Ready before the first event and each step measures one change. A repository whose
// main has the Flux path already is left as it is.
func (h *harness) seedRepository() {
	if exec.Command("git", "--git-dir", h.gitDir, "rev-parse", "--verify", "-q", "refs/heads/main:"+h.fluxPath).Run() == nil {
		return
	}
	seed := filepath.Join(h.work, "seed")
	h.git("", "clone", "-q", h.gitDir, seed)
	os.MkdirAll(filepath.Join(seed, h.fluxPath), 0o755)
	os.WriteFile(filepath.Join(seed, "README.md"), []byte("# magnum clusters\n"), 0o644)
	os.WriteFile(filepath.Join(seed, h.fluxPath, "README.md"), []byte("Written by magnum-gitops.\n"), 0o644)
	if h.branchPerNamespace || h.argo && h.perNamespace {
		// Something for the root's published branch (or Argo CD's root Application, which
		// refuses a path that does not exist) to hold before the first cluster.
		os.MkdirAll(filepath.Join(seed, h.fluxPath, generator.FluxDir), 0o755)
		os.WriteFile(filepath.Join(seed, h.fluxPath, generator.FluxDir, "README.md"), []byte("Flux objects, written by magnum-gitops.\n"), 0o644)
	}
	if h.seedTree != "" {
		h.copySeedTree(seed)
	}
	h.git(seed, "add", ".")
	h.git(seed, "commit", "-q", "-m", "initial")
	h.git(seed, "push", "-q", "origin", "HEAD:main")
}

// ---------------------------------------------------------------------------------------
// Helm chart repository: the chart packages of ../shared with an index.yaml from Helm's SDK

func (h *harness) startChartServer() {
	t := h.t
	dir := filepath.Join(h.work, "charts")
	os.MkdirAll(dir, 0o755)
	pkgs, _ := filepath.Glob(filepath.Join(h.bin.shared, "charts", "*.tgz"))
	if len(pkgs) == 0 {
		t.Fatalf("no chart packages in %s/charts", h.bin.shared)
	}
	for _, p := range pkgs {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(p)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	logf := h.logFile("chart-repo")
	var logMu sync.Mutex
	files := http.FileServer(http.Dir(dir))
	addr := h.serve("charts", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.chartRequests.Add(1)
		logMu.Lock()
		fmt.Fprintf(logf, "%s %s %s\n", time.Now().Format(time.RFC3339Nano), r.Method, r.URL.Path)
		logMu.Unlock()
		files.ServeHTTP(w, r)
	}))
	h.chartURL = "http://" + addr
	index, err := repo.IndexDirectory(dir, h.chartURL)
	if err != nil {
		t.Fatalf("indexing the charts: %v", err)
	}
	index.SortEntries()
	if err := index.WriteFile(filepath.Join(dir, "index.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// serve serves handler on a loopback port until the test ends and returns the address.
func (h *harness) serve(name string, handler http.Handler) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		h.t.Fatal(err)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 30 * time.Second}
	go func() { _ = srv.Serve(ln) }() // ends when the test closes the listener
	h.t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// ---------------------------------------------------------------------------------------
// magnum-gitops configuration: Git with credentials from a file, SOPS for a fresh age key

func (h *harness) writeMagnumConfig() {
	t := h.t
	id := h.ageIdentity
	if id == nil {
		var err error
		if id, err = age.GenerateX25519Identity(); err != nil {
			t.Fatal(err)
		}
		h.ageIdentity = id
	}
	pw := filepath.Join(h.work, "git-password")
	digest := filepath.Join(h.work, "sops-digest.key")
	if err := os.WriteFile(pw, []byte(h.gitPassword+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(digest, []byte(randomToken()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h.serveToken = randomToken()
	token := filepath.Join(h.work, "api-token")
	if err := os.WriteFile(token, []byte(h.serveToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	listen := freeAddr(t)
	h.serveURL = "http://" + listen
	// As deploy/service/config.yaml, on loopback.
	serve := map[string]any{
		"listen":          listen,
		"token_files":     []string{token},
		"kustomization":   fluxNamespace + "/" + sourceName,
		"leader_election": map[string]any{"namespace": serveNamespace, "name": "magnum-gitops"},
	}
	if h.requestReconcile {
		serve["reconcile_request"] = map[string]any{"namespace": fluxNamespace, "name": sourceName}
	}
	if h.argo {
		// The parent Application stands where the root Kustomization does, and is what
		// serve asks Argo CD to refresh (the namespace is argo.namespace's).
		serve["kustomization"] = argocd.Namespace + "/" + argoParentName
		if h.requestReconcile {
			serve["reconcile_request"] = map[string]any{"name": argoParentName}
		}
	}
	flux := map[string]any{"path": h.fluxPath}
	if h.capi != nil {
		flux["post_renderers"] = capiPostRenderers(t, h.capiStartup)
		b, err := json.Marshal(flux["post_renderers"])
		if err == nil {
			err = json.Unmarshal(b, &h.postRenderers)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if h.perNamespace {
		// flux.git.url defaults to git.url: the harness's Git server is Flux's too.
		flux["layout"] = generator.LayoutPerNamespace
		if h.branchPerNamespace {
			flux["layout"] = generator.LayoutBranchPerNamespace
		}
		flux["git"] = map[string]any{"secret_ref": gitSecretName}
	}
	cfg := map[string]any{
		"serve": serve,
		"magnum": map[string]any{
			"capi_helm": map[string]any{
				"helm_chart_repo":            h.chartURL,
				"default_helm_chart_version": "0.27.0",
			},
		},
		"management_cluster": map[string]any{"capo_api_versions": []string{"v1beta1"}},
		"flux":               flux,
		"git": map[string]any{
			"url":       h.gitURL,
			"branch":    "main",
			"cache_dir": filepath.Join(h.work, "magnum-gitops-cache"),
			"author":    map[string]any{"name": "magnum-gitops e2e", "email": "e2e@magnum-gitops.invalid"},
			"auth":      map[string]any{"username": h.gitUsername(), "password_file": pw},
		},
		"sops": map[string]any{
			"age_recipients":  []string{id.Recipient().String()},
			"digest_key_file": digest,
		},
	}
	if h.valuesOverlay != nil {
		cfg["values_overlay"] = h.valuesOverlay
	}
	if h.review != nil {
		cfg["git"].(map[string]any)["review"] = h.review.config(t, h.work)
	}
	if h.argo {
		// argo.repo_url and argo.target_revision default to git.url and git.branch: Argo
		// CD's repo-server fetches the repository serve pushes to.
		cfg["format"] = generator.FormatArgo
	}
	data, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.config = filepath.Join(h.work, "magnum-gitops.yaml")
	if err := os.WriteFile(h.config, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// commitEvent hands one event to magnum-gitops and returns the commit that carries it.
// It is the only place that knows how events reach magnum-gitops: a POST to `serve`'s
// event API with its bearer token, answered once the commit is pushed, as the driver shim
// (contrib/magnum-driver) sends them.
func (h *harness) commitEvent(eventFile string) string {
	t := h.t
	t.Helper()
	sum := h.postEvent(eventFile)
	if sum.Outcome != "committed" || len(sum.Revision) != 40 {
		t.Fatalf("POST /v1/events %s: outcome %q revision %q, want a commit", filepath.Base(eventFile), sum.Outcome, sum.Revision)
	}
	if head := h.headRevision(); head != sum.Revision {
		t.Fatalf("the server's main is %s, magnum-gitops reported %s", head, sum.Revision)
	}
	return sum.Revision
}

// eventAnswer is the part of serve's answer to POST /v1/events the tests read.
type eventAnswer struct {
	Outcome  string `json:"outcome"`
	Revision string `json:"revision"`
	// PullRequest is the pull request that carries the event in review mode.
	PullRequest string `json:"pull_request"`
	StackID     string `json:"stack_id"`
	Error       string `json:"error"`
	Code        string `json:"code"`
	Message     string `json:"message"`
}

// postEvent sends one event file to serve and fails the test on any answer but 200.
func (h *harness) postEvent(eventFile string) eventAnswer {
	t := h.t
	t.Helper()
	body, err := os.ReadFile(eventFile)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(h.ctx, 2*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.serveURL+"/v1/events", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/yaml")
	req.Header.Set("Authorization", "Bearer "+h.serveToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST /v1/events %s: %v", filepath.Base(eventFile), err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var ans eventAnswer
	if err := json.Unmarshal(data, &ans); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /v1/events %s: %s: %s", filepath.Base(eventFile), resp.Status, data)
	}
	return ans
}

// startServe runs `magnum-gitops serve` as the service runs next to Magnum: events over
// its API, status and the delete choreography's second phase from the API server (its
// leader loops, elected through a Lease).
func (h *harness) startServe() {
	// TMPDIR: serve's clone (no git.cache_dir) stays in the harness's directory, also
	// when a test kills it.
	env := append(os.Environ(), "HOME="+h.work, "TMPDIR="+h.work)
	h.serveProc = h.startProcess("magnum-gitops-serve", h.bin.magnum, []string{"serve", "--config", h.config,
		"--source", "api", "--kubeconfig", h.kubeconfig}, env)
	// /readyz: the Git remote answers and the status cache has synced.
	h.waitHTTP(h.serveProc, h.serveURL+"/readyz", 2*time.Minute)
}

// checkSettledKept: serve built from a clean checkout keeps what its resync at start
// found as rendered beside its clone in git.cache_dir, for its next start
// (docs/service.md#resync); built from modified sources, it keeps nothing.
func (h *harness) checkSettledKept() {
	h.t.Helper()
	bi, err := buildinfo.ReadFile(h.bin.magnum)
	if err != nil {
		h.t.Fatal(err)
	}
	clean := false
	for _, s := range bi.Settings {
		if s.Key == "vcs.modified" {
			clean = s.Value == "false"
		}
	}
	file := filepath.Join(h.work, "magnum-gitops-cache", "magnum-gitops-settled")
	if !clean {
		h.t.Logf("%s is built from modified sources (or without VCS stamps): serve keeps no settled clusters", h.bin.magnum)
		return
	}
	h.waitFor("serve to keep its settled clusters in "+file, time.Minute, func() (bool, string) {
		_, err := os.Stat(file)
		return err == nil, fmt.Sprint(err)
	})
}

// headRevision is main on the Git server.
func (h *harness) headRevision() string {
	return strings.TrimSpace(h.git(h.gitDir, "rev-parse", "refs/heads/main"))
}

// ---------------------------------------------------------------------------------------
// Flux controllers

type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

func (h *harness) startFlux() {
	t := h.t
	storage := filepath.Join(h.work, "source-storage")
	if err := os.MkdirAll(storage, 0o755); err != nil {
		t.Fatal(err)
	}
	storageAddr := freeAddr(t)
	common := func() (metrics, health string, args []string) {
		metrics, health = freeAddr(t), freeAddr(t)
		return metrics, health, []string{"--metrics-addr=" + metrics, "--health-addr=" + health, "--log-level=debug",
			"--log-encoding=console"}
	}
	type ctl struct {
		name, version string
		args          []string
		health        string
	}
	var ctls []ctl
	{
		_, health, args := common()
		ctls = append(ctls, ctl{"source-controller", sourceControllerVersion, append(args,
			"--storage-path="+storage, "--storage-addr="+storageAddr, "--storage-adv-addr="+storageAddr,
			"--requeue-dependency=5s"), health})
	}
	{
		_, health, args := common()
		ctls = append(ctls, ctl{"kustomize-controller", kustomizeControllerVersion, append(args,
			"--requeue-dependency=5s"), health})
	}
	{
		_, health, args := common()
		ctls = append(ctls, ctl{"helm-controller", helmControllerVersion, append(args,
			"--requeue-dependency=5s"), health})
	}
	env := append(os.Environ(), "KUBECONFIG="+h.kubeconfig, "RUNTIME_NAMESPACE="+fluxNamespace, "HOME="+h.work)
	for _, c := range ctls {
		p := h.startProcess(c.name, h.bin.controller(c.name, c.version), c.args, env)
		h.waitHTTP(p, "http://"+c.health+"/readyz", time.Minute)
	}
}

func (h *harness) startProcess(name, path string, args, env []string) *process {
	t := h.t
	logPath := filepath.Join(h.logDir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path, args...)
	cmd.Env = env
	cmd.Dir = h.work
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("starting %s: %v", name, err)
	}
	p := &process{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	h.procs = append(h.procs, p)
	t.Cleanup(func() {
		select {
		case <-p.done:
			return
		default:
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// waitHTTP waits for url to answer 200, failing early when the process exits.
func (h *harness) waitHTTP(p *process, url string, timeout time.Duration) {
	t := h.t
	t.Helper()
	deadline := time.Now().Add(timeout)
	c := &http.Client{Timeout: 2 * time.Second}
	for {
		select {
		case <-p.done:
			h.printLogs()
			t.Fatalf("%s exited before it was ready: %v", p.name, p.err)
		default:
		}
		resp, err := c.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			h.printLogs()
			t.Fatalf("%s not ready at %s after %s: %v", p.name, url, timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// freeAddr returns a loopback address nobody listens on, for a process started later.
// The port comes from below the kernel's ephemeral range: a port of that range, free when
// picked, can become the source port of any outgoing connection (the controllers open
// many) before the process binds it, which failed serve's start with "address already in
// use". It also stays above the ports Cluster API's in-memory backend binds on every
// address (19000, and 20000 up, one for each workload cluster): a harness server there
// once kept a cluster's API server from starting. No port is handed out twice.
func freeAddr(t testing.TB) string {
	portsMu.Lock()
	defer portsMu.Unlock()
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > firstFreePort+2000 {
				low = n
			}
		}
	}
	for range 1000 {
		port := firstFreePort + mrand.IntN(low-firstFreePort)
		if portsGiven[port] {
			continue
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		ln.Close()
		portsGiven[port] = true
		return ln.Addr().String()
	}
	t.Fatal("no free loopback port below the ephemeral range")
	return ""
}

var (
	portsMu    sync.Mutex
	portsGiven = map[int]bool{}
)

// firstFreePort is the lowest port freeAddr hands out: above CAPD's in-memory listeners
// (20000 and one more for each workload cluster a test makes at once, 50 at most).
const firstFreePort = 21000

// ---------------------------------------------------------------------------------------
// deploy/flux: the manifests an operator applies, with the test's URL

func (h *harness) applyDeployManifests() {
	t := h.t
	ctx := h.ctx
	// The Secrets the manifests reference: Git credentials and the age identity.
	if err := h.c.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: gitSecretName, Namespace: fluxNamespace},
		StringData: map[string]string{"username": h.gitUsername(), "password": h.gitPassword},
	}); err != nil {
		t.Fatal(err)
	}
	if err := h.c.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: ageSecretName, Namespace: fluxNamespace},
		StringData: map[string]string{"magnum-gitops.agekey": h.ageIdentity.String() + "\n"},
	}); err != nil {
		t.Fatal(err)
	}
	deploy := filepath.Join(testenv.RepoRoot(), "deploy", "flux")
	if h.perNamespace {
		deploy = filepath.Join(deploy, "per-namespace")
	}
	files, _ := filepath.Glob(filepath.Join(deploy, "*.yaml"))
	if h.branchPerNamespace {
		// The same root Kustomization, its source on the root's published branch.
		files = []string{filepath.Join(deploy, "..", "branch-per-namespace", "gitrepository.yaml"), filepath.Join(deploy, "kustomization.yaml")}
	}
	var kinds []string
	for _, f := range files {
		for _, o := range readObjects(t, f) {
			if o.GroupVersionKind() == gvkGitRepository {
				if err := unstructured.SetNestedField(o.Object, h.gitURL, "spec", "url"); err != nil {
					t.Fatal(err)
				}
			}
			kinds = append(kinds, o.GetKind()+"/"+o.GetName())
			if o.GroupVersionKind() == gvkKustomization && !h.perNamespace {
				if err := unstructured.SetNestedField(o.Object, "./"+h.fluxPath, "spec", "path"); err != nil {
					t.Fatal(err)
				}
			}
			if o.GroupVersionKind() == gvkKustomization && h.adjustRoot != nil {
				h.adjustRoot(o)
			}
			if err := h.c.Create(ctx, o); err != nil {
				t.Fatalf("%s: creating %s %s: %v", filepath.Base(f), o.GetKind(), o.GetName(), err)
			}
		}
	}
	sort.Strings(kinds)
	want := []string{"GitRepository/" + sourceName, "Kustomization/" + sourceName}
	if strings.Join(kinds, ",") != strings.Join(want, ",") {
		t.Fatalf("%s holds %v, want %v", deploy, kinds, want)
	}
}

func readObjects(t testing.TB, path string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return out
			}
			t.Fatalf("%s: %v", path, err)
		}
		if len(m) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
}

// checkReconcileRequest asserts what serve did to the GitRepository after a push at
// pushed: with serve.reconcile_request, reconcile.fluxcd.io/requestedAt is set at or after
// the push (source-controller fetched the commit for it); without, it is never set.
func (h *harness) checkReconcileRequest(pushed time.Time) {
	h.t.Helper()
	h.checkReconcileRequestOf(sourceName, pushed)
}

// checkReconcileRequestOf is checkReconcileRequest for the GitRepository named.
func (h *harness) checkReconcileRequestOf(name string, pushed time.Time) {
	h.t.Helper()
	g, ok := h.get(gvkGitRepository, fluxNamespace, name)
	if !ok {
		h.t.Fatalf("the GitRepository %s is gone", name)
	}
	v, set := g.GetAnnotations()["reconcile.fluxcd.io/requestedAt"]
	if !h.requestReconcile {
		if set {
			h.t.Errorf("serve requested a reconcile (%s) without serve.reconcile_request", v)
		}
		return
	}
	at, err := time.Parse(time.RFC3339Nano, v)
	if err != nil || at.Before(pushed.Add(-time.Second)) {
		h.t.Errorf("GitRepository reconcile.fluxcd.io/requestedAt = %q, want a time after the push at %s (%v)",
			v, pushed.Format(time.RFC3339Nano), err)
	}
	handled, _, _ := unstructured.NestedString(g.Object, "status", "lastHandledReconcileAt")
	if hat, err := time.Parse(time.RFC3339Nano, handled); err != nil || hat.Before(pushed.Add(-time.Second)) {
		h.t.Errorf("source-controller last handled a reconcile request at %q, before the push", handled)
	}
}

// publisher is a clone of the harness's repository that pushes as serve does in the
// branch-per-namespace layout (for the tests that run without serve), opened once.
func (h *harness) publisher() *gitrepo.Repo {
	h.t.Helper()
	if h.published == nil {
		cfg := generator.DefaultConfig()
		cfg.Flux.Path = h.fluxPath
		r, err := gitrepo.Open(h.ctx, gitrepo.Options{URL: h.gitURL, Auth: gitrepo.Auth{Username: h.gitUsername(), Password: h.gitPassword},
			Author: gitrepo.Signature{Name: "magnum-gitops", Email: "magnum-gitops@localhost"},
			Split:  &gitrepo.Split{Prefix: magnum.PublishedBranchPrefix, Part: cfg.PublishedPart, Dirs: cfg.PublishedDirs}})
		if err != nil {
			h.t.Fatalf("opening the repository: %v", err)
		}
		h.published = r
	}
	return h.published
}

// publishes reports whether applied, a revision of a published branch of the
// branch-per-namespace layout, holds what main's revision holds in the directories that
// the branch of the Kustomization named publishes: Flux applied that commit's content.
func (h *harness) publishes(name, applied, revision string) bool {
	branch, id, ok := strings.Cut(applied, "@sha1:")
	if !h.branchPerNamespace || !ok {
		return false
	}
	dirs := []string{path.Join(h.fluxPath, generator.FluxDir), path.Join(h.fluxPath, generator.SourcesDir)}
	if name != sourceName {
		dirs = []string{path.Join(h.fluxPath, name)}
	}
	if branch != generator.PublishedBranch(dirs[0]) {
		return false
	}
	for _, d := range dirs {
		if h.treeAt(id, d) != h.treeAt(revision, d) {
			return false
		}
	}
	return true
}

// treeAt is the id of a directory at a commit of the bare repository ("" when missing).
func (h *harness) treeAt(commit, dir string) string {
	out, _ := exec.Command("git", "--git-dir", h.gitDir, "rev-parse", "-q", "--verify", commit+":"+dir).Output()
	return strings.TrimSpace(string(out))
}

// publishedHead is the head of the branch that publishes a namespace's directory.
func (h *harness) publishedHead(namespace string) string {
	return strings.TrimSpace(h.git(h.gitDir, "rev-parse", "refs/heads/"+generator.PublishedBranch(path.Join(h.fluxPath, namespace))))
}

// ---------------------------------------------------------------------------------------
// Reading the API server

func (h *harness) object(gvk schema.GroupVersionKind, ns, name string) *unstructured.Unstructured {
	o := &unstructured.Unstructured{}
	o.SetGroupVersionKind(gvk)
	o.SetNamespace(ns)
	o.SetName(name)
	return o
}

// reconcileNow sets reconcile.fluxcd.io/requestedAt on a Flux object in flux-system,
// as `flux reconcile` and serve.reconcile_request do: a merge patch of metadata only.
func (h *harness) reconcileNow(gvk schema.GroupVersionKind, name string) {
	h.t.Helper()
	p := fmt.Sprintf(`{"metadata":{"annotations":{"reconcile.fluxcd.io/requestedAt":%q}}}`, time.Now().Format(time.RFC3339Nano))
	if err := h.c.Patch(h.ctx, h.object(gvk, fluxNamespace, name), client.RawPatch(types.MergePatchType, []byte(p))); err != nil {
		h.t.Fatalf("requesting a reconcile of %s %s: %v", gvk.Kind, name, err)
	}
}

// get reads an object; found is false when it does not exist.
func (h *harness) get(gvk schema.GroupVersionKind, ns, name string) (*unstructured.Unstructured, bool) {
	h.t.Helper()
	o := h.object(gvk, ns, name)
	err := h.c.Get(h.ctx, client.ObjectKeyFromObject(o), o)
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	if err != nil {
		h.t.Fatalf("get %s %s/%s: %v", gvk.Kind, ns, name, err)
	}
	return o, true
}

func (h *harness) list(gvk schema.GroupVersionKind, ns string, opts ...client.ListOption) []unstructured.Unstructured {
	h.t.Helper()
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := h.c.List(h.ctx, l, append(opts, client.InNamespace(ns))...); err != nil {
		h.t.Fatalf("list %s in %s: %v", gvk.Kind, ns, err)
	}
	return l.Items
}

// condition returns a status condition of an object.
func condition(o *unstructured.Unstructured, typ string) (status, reason, message string, observedGeneration int64) {
	conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] != typ {
			continue
		}
		status, _ = m["status"].(string)
		reason, _ = m["reason"].(string)
		message, _ = m["message"].(string)
		switch g := m["observedGeneration"].(type) {
		case int64:
			observedGeneration = g
		case float64:
			observedGeneration = int64(g)
		}
	}
	return status, reason, message, observedGeneration
}

// waitFor polls check until it reports done, and fails the test after timeout with the
// last state it described. It returns when the condition was first seen.
func (h *harness) waitFor(what string, timeout time.Duration, check func() (bool, string)) time.Time {
	h.t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		ok, state := check()
		if ok {
			return time.Now()
		}
		last = state
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out after %s waiting for %s; last state: %s", timeout, what, last)
		}
		select {
		case <-h.ctx.Done():
			h.t.Fatalf("waiting for %s: %v", what, h.ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitApplied waits for the Kustomization to have applied revision and returns when.
func (h *harness) waitApplied(revision string, timeout time.Duration) time.Time {
	h.t.Helper()
	return h.waitAppliedBy(sourceName, revision, timeout)
}

// waitFetched waits for the root GitRepository's artifact to hold revision.
func (h *harness) waitFetched(revision string, timeout time.Duration) {
	h.t.Helper()
	want := "main@sha1:" + revision
	h.waitFor("GitRepository "+sourceName+" to fetch "+want, timeout, func() (bool, string) {
		g, ok := h.get(gvkGitRepository, fluxNamespace, sourceName)
		if !ok {
			return false, "no GitRepository"
		}
		got, _, _ := unstructured.NestedString(g.Object, "status", "artifact", "revision")
		return got == want, "artifact " + got
	})
}

// fluxFor names the GitRepository and Kustomization that apply a project namespace: the
// root ones, or in the per-namespace layout the namespace's own.
func (h *harness) fluxFor(namespace string) string {
	if h.perNamespace {
		return magnum.FluxObjectName(namespace)
	}
	return sourceName
}

// waitAppliedBy waits for the Kustomization named to have applied revision.
func (h *harness) waitAppliedBy(name, revision string, timeout time.Duration) time.Time {
	h.t.Helper()
	want := "main@sha1:" + revision
	return h.waitFor("Kustomization "+name+" to apply "+want, timeout, func() (bool, string) {
		k, ok := h.get(gvkKustomization, fluxNamespace, name)
		if !ok {
			return false, "no Kustomization"
		}
		applied, _, _ := unstructured.NestedString(k.Object, "status", "lastAppliedRevision")
		st, reason, msg, _ := condition(k, "Ready")
		if applied == want || h.publishes(name, applied, revision) {
			if st != "True" {
				h.t.Errorf("Kustomization applied %s but Ready=%s %s: %s", want, st, reason, msg)
			}
			return true, ""
		}
		return false, fmt.Sprintf("lastAppliedRevision=%s Ready=%s %s: %s", applied, st, reason, msg)
	})
}

// ---------------------------------------------------------------------------------------
// Logs and diagnostics

func (h *harness) logFile(name string) *os.File {
	f, err := os.Create(filepath.Join(h.logDir, name+".log"))
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { f.Close() })
	return f
}

// dumpOnFailure prints the Flux objects and every component's log when the test failed.
func (h *harness) dumpOnFailure() {
	if !h.t.Failed() {
		return
	}
	var b strings.Builder
	for _, gvk := range []schema.GroupVersionKind{gvkGitRepository, gvkKustomization, gvkHelmRepository, gvkHelmChart, gvkHelmRelease} {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := h.c.List(context.Background(), l); err != nil {
			fmt.Fprintf(&b, "list %s: %v\n", gvk.Kind, err)
			continue
		}
		for _, o := range l.Items {
			st, _, _ := unstructured.NestedFieldNoCopy(o.Object, "status")
			y, _ := yaml.Marshal(map[string]any{"generation": o.GetGeneration(), "status": st})
			fmt.Fprintf(&b, "--- %s %s/%s\n%s", gvk.Kind, o.GetNamespace(), o.GetName(), y)
		}
	}
	h.t.Logf("Flux objects at failure:\n%s", b.String())
	if h.argoCD != nil {
		h.dumpApplications()
	}
	h.printLogs()
}

// printLogs prints the end of every component's log; the full logs stay in logDir.
func (h *harness) printLogs() {
	files, _ := filepath.Glob(filepath.Join(h.logDir, "*.log"))
	for _, f := range files {
		h.t.Logf("==== %s (last 300 lines; full log kept in %s)\n%s", filepath.Base(f), f, tail(f, 300))
	}
	if h.gitDir != "" {
		if out, err := exec.Command("git", "-C", h.gitDir, "log", "--format=%H %s", "-n", "20", "main").CombinedOutput(); err == nil {
			h.t.Logf("==== git log of the repository\n%s", out)
		}
	}
}

func tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var lines []string
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1024*1024), 16*1024*1024)
	for s.Scan() {
		lines = append(lines, s.Text())
		if len(lines) > 4*n {
			lines = lines[len(lines)-n:]
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// ---------------------------------------------------------------------------------------
// Small helpers

func (h *harness) git(dir string, args ...string) string {
	h.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=e2e", "GIT_AUTHOR_EMAIL=e2e@magnum-gitops.invalid",
		"GIT_COMMITTER_NAME=e2e", "GIT_COMMITTER_EMAIL=e2e@magnum-gitops.invalid", "GIT_TERMINAL_PROMPT=0",
		"GIT_CONFIG_NOSYSTEM=1", "HOME="+h.work)
	out, err := cmd.CombinedOutput()
	if err != nil {
		h.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func randomToken() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return base64.StdEncoding.EncodeToString(b)
}
