// Package testenv starts a real kube-apiserver and etcd (controller-runtime envtest) with
// every CRD magnum-gitops touches installed: Cluster API core, kubeadm bootstrap and
// control plane, Flux source and helm, Argo CD Application, CAPO, and the azimuth addon
// stand-ins.
//
// The binaries come from hack/testbin.sh (kube-apiserver built from the Go module proxy,
// etcd from Debian) through KUBEBUILDER_ASSETS. Tests that need the API server skip with one
// line when the binaries are missing, and fail instead when CI is set.
package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"
)

// ErrNoBinaries reports that kube-apiserver or etcd is not available.
var ErrNoBinaries = errors.New("testenv: kube-apiserver/etcd not found (run make testbin, or make test)")

// Module versions whose CRDs are installed; they follow go.mod.
const (
	clusterAPIModule       = "sigs.k8s.io/cluster-api"
	clusterAPIVersion      = "v1.14.2"
	sourceControllerModule = "github.com/fluxcd/source-controller"
	sourceControllerVer    = "v1.9.4"
	// argoCDModule carries the Application CRD (manifests/crds); v3.5 is the newest line
	// that builds with Go 1.26, and only its CRD file is read.
	kustomizeControllerModule = "github.com/fluxcd/kustomize-controller"
	kustomizeControllerVer    = "v1.9.4"
	argoCDModule              = "github.com/argoproj/argo-cd/v3"
	argoCDVersion             = "v3.5.4"
)

// Env is a running API server.
type Env struct {
	// Config reaches the API server as an admin.
	Config *rest.Config
	// Client is an uncached client with the core scheme; CRs go through unstructured.
	Client client.Client
	env    *envtest.Environment
}

// Start starts etcd and kube-apiserver and installs the CRDs. It returns ErrNoBinaries
// when the binaries are missing.
func Start() (*Env, error) {
	assets, err := assetsDir()
	if err != nil {
		return nil, err
	}
	crds, err := LoadCRDs()
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDs:                  crds,
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("testenv: starting the API server: %w", err)
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		_ = env.Stop()
		return nil, err
	}
	return &Env{Config: cfg, Client: c, env: env}, nil
}

// Stop stops the API server and etcd.
func (e *Env) Stop() error { return e.env.Stop() }

// assetsDir finds the directory holding kube-apiserver and etcd.
func assetsDir() (string, error) {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		out, err := exec.Command("bash", "-c", `
			v=$(ls -1 "${XDG_CACHE_HOME:-$HOME/.cache}/magnum-gitops/testbin" 2>/dev/null | sort -V | tail -n1)
			[ -n "$v" ] && echo "${XDG_CACHE_HOME:-$HOME/.cache}/magnum-gitops/testbin/$v"`).Output()
		if err != nil || len(bytes.TrimSpace(out)) == 0 {
			return "", ErrNoBinaries
		}
		dir = string(bytes.TrimSpace(out))
	}
	for _, b := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			return "", fmt.Errorf("%w: %v", ErrNoBinaries, err)
		}
	}
	return dir, nil
}

// Main runs a package's tests around one API server and returns the exit code; use it from
// TestMain as os.Exit(testenv.Main(m, &env)). When the binaries are missing, env stays nil
// and Require skips (or fails under CI). With -run '^$' (benchmarks only) none is started.
func Main(m *testing.M, env **Env) int {
	flag.Parse()
	if f := flag.Lookup("test.run"); f != nil && f.Value.String() == "^$" {
		// Benchmarks only (make bench): an idle API server still takes CPU from what
		// they measure, and none of them uses it.
		return m.Run()
	}
	e, err := Start()
	switch {
	case errors.Is(err, ErrNoBinaries):
		startErr = err
	case err != nil:
		fmt.Fprintln(os.Stderr, err)
		return 1
	default:
		*env = e
		defer func() {
			if err := e.Stop(); err != nil {
				fmt.Fprintln(os.Stderr, "testenv: stopping the API server:", err)
			}
		}()
	}
	return m.Run()
}

var startErr error

// Require skips the test when the API server could not be started for want of binaries,
// or fails it when CI is set: CI must run these tests.
func Require(t testing.TB, env *Env) {
	t.Helper()
	if env != nil {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("CI is set and the API server is unavailable: %v", startErr)
	}
	t.Skipf("skipping: %v", startErr)
}

// LoadCRDs reads every CRD the tests install. Cluster API's CRDs serve v1beta1 and v1beta2
// and convert between them with a webhook, which envtest does not run; they are installed
// with v1beta1 as the storage version and no conversion, so objects written as v1beta1 (as
// the openstack-cluster chart writes them) keep every field.
func LoadCRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var files []string
	capi, err := moduleDir(clusterAPIModule, clusterAPIVersion)
	if err != nil {
		return nil, err
	}
	for _, sub := range []string{"core/config/crd/bases", "controlplane/kubeadm/config/crd/bases", "bootstrap/kubeadm/config/crd/bases"} {
		m, _ := filepath.Glob(filepath.Join(capi, sub, "*.yaml"))
		files = append(files, m...)
	}
	src, err := moduleDir(sourceControllerModule, sourceControllerVer)
	if err != nil {
		return nil, err
	}
	m, _ := filepath.Glob(filepath.Join(src, "config/crd/bases", "*.yaml"))
	files = append(files, m...)
	kc, err := moduleDir(kustomizeControllerModule, kustomizeControllerVer)
	if err != nil {
		return nil, err
	}
	m, _ = filepath.Glob(filepath.Join(kc, "config/crd/bases", "*.yaml"))
	files = append(files, m...)
	argo, err := moduleDir(argoCDModule, argoCDVersion)
	if err != nil {
		return nil, err
	}
	files = append(files, filepath.Join(argo, "manifests", "crds", "application-crd.yaml"))
	shared, err := SharedDir()
	if err != nil {
		return nil, err
	}
	m, _ = filepath.Glob(filepath.Join(shared, "crds", "*.yaml"))
	files = append(files, m...)
	own, _ := filepath.Glob(filepath.Join(RepoRoot(), "internal", "testenv", "crds", "*.yaml"))
	files = append(files, own...)

	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		list, err := readCRDs(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		crds = append(crds, list...)
	}
	for _, crd := range crds {
		if crd.Spec.Group == "cluster.x-k8s.io" || strings.HasSuffix(crd.Spec.Group, ".cluster.x-k8s.io") &&
			crd.Spec.Group != "infrastructure.cluster.x-k8s.io" {
			storeAsV1beta1(crd)
		}
	}
	return crds, nil
}

// storeAsV1beta1 makes v1beta1 the storage version of a CRD that serves it.
func storeAsV1beta1(crd *apiextensionsv1.CustomResourceDefinition) {
	has := false
	for _, v := range crd.Spec.Versions {
		has = has || v.Name == "v1beta1"
	}
	if !has {
		return
	}
	for i := range crd.Spec.Versions {
		crd.Spec.Versions[i].Storage = crd.Spec.Versions[i].Name == "v1beta1"
	}
	crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
}

func readCRDs(path string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*apiextensionsv1.CustomResourceDefinition
	for {
		var raw map[string]any
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if raw["kind"] != "CustomResourceDefinition" {
			continue
		}
		b, _ := json.Marshal(raw)
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(b, crd); err != nil {
			return nil, err
		}
		out = append(out, crd)
	}
}

// moduleDir returns a module's directory in the module cache, downloading it through the
// module proxy if needed (a download, not a build: the controller modules need not build).
func moduleDir(path, version string) (string, error) {
	out, err := exec.Command("go", "mod", "download", "-json", path+"@"+version).Output()
	if err != nil {
		return "", fmt.Errorf("go mod download %s@%s: %w", path, version, err)
	}
	var m struct{ Dir, Error string }
	if err := json.Unmarshal(out, &m); err != nil || m.Dir == "" {
		return "", fmt.Errorf("go mod download %s@%s: %s", path, version, m.Error)
	}
	return m.Dir, nil
}

// RepoRoot is the root of this repository (the directory holding go.mod).
func RepoRoot() string {
	dir, _ := os.Getwd()
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return dir
		}
	}
}

// SharedDir is ../shared beside the repository.
func SharedDir() (string, error) {
	d := filepath.Join(RepoRoot(), "..", "shared")
	if _, err := os.Stat(filepath.Join(d, "crds")); err != nil {
		return "", fmt.Errorf("%w: ../shared/crds is missing", ErrNoBinaries)
	}
	return d, nil
}

// EnsureNamespace creates a namespace if it does not exist.
func (e *Env) EnsureNamespace(ctx context.Context, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	return client.IgnoreAlreadyExists(e.Client.Create(ctx, ns))
}

// KubeConfig returns a kubeconfig of an administrator of the API server, for processes the
// tests start.
func (e *Env) KubeConfig() ([]byte, error) {
	u, err := e.env.AddUser(envtest.User{Name: "magnum-gitops-test", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, err
	}
	return u.KubeConfig()
}
