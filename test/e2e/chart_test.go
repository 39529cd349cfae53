//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/registry"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/magnum-gitops/magnum-gitops/internal/servicechart"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
)

var (
	gvkDeployment = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	gvkConfigMap  = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
)

// TestE2EServiceChart: the service installs itself the way it installs clusters. Its
// chart, packaged as make chart packages it, is pushed to a real OCI registry (Debian's
// docker-registry, distribution 2.8) with the Helm SDK; a HelmRepository of type oci and a
// HelmRelease committed to Git are applied by the real kustomize-controller, and the real
// helm-controller installs the chart from the registry. A second HelmRelease with a value
// of the wrong type is refused at install, its condition naming the value. No kubelet runs
// here: the install does not wait for the pods.
func TestE2EServiceChart(t *testing.T) {
	b := findBinaries(t)
	registryBin, err := exec.LookPath("docker-registry")
	if err != nil {
		unavailable(t, "docker-registry is not installed (apt-get install docker-registry)")
	}
	h := newHarness(t, b, false, withoutServe())
	addr := h.startRegistry(registryBin)

	version, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	v := strings.TrimSpace(string(version))
	pkg, err := servicechart.Package(testenv.RepoRoot(), v, time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(pkg)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := registry.NewClient(registry.ClientOptPlainHTTP(), registry.ClientOptCredentialsFile(filepath.Join(h.work, "registry.json")),
		registry.ClientOptWriter(h.logFile("helm-push")))
	if err != nil {
		t.Fatal(err)
	}
	pushed, err := rc.Push(data, addr+"/charts/magnum-gitops:"+v)
	if err != nil {
		t.Fatalf("pushing the chart to %s: %v", addr, err)
	}
	t.Logf("pushed %s (%s)", pushed.Ref, pushed.Manifest.Digest)

	// What an operator commits: the registry, and the release with its values.
	dir := filepath.Join(h.work, "service-chart")
	h.git("", "clone", "-q", h.gitDir, dir)
	sub := filepath.Join(dir, h.fluxPath, "magnum-gitops-service")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"helmrepository.yaml": fmt.Sprintf(`apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: magnum-gitops-charts, namespace: %s}
spec: {type: oci, url: "oci://%s/charts", insecure: true, interval: 10m}
`, fluxNamespace, addr),
		"helmrelease.yaml":     serviceHelmRelease("magnum-gitops", "magnum-gitops", v, "2"),
		"helmrelease-bad.yaml": serviceHelmRelease("magnum-gitops-bad", "magnum-gitops-bad", v, `"two"`),
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(sub, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h.git(dir, "add", ".")
	h.git(dir, "commit", "-q", "-m", "magnum-gitops: the service itself, from its chart")
	h.git(dir, "push", "-q", "origin", "HEAD:main")
	h.waitApplied(h.headRevision(), defaultWaitStep)

	h.waitFor("HelmRelease magnum-gitops installed", defaultWaitStep, func() (bool, string) {
		hr, ok := h.get(gvkHelmRelease, fluxNamespace, "magnum-gitops")
		if !ok {
			return false, "no HelmRelease"
		}
		status, reason, msg, _ := condition(hr, "Ready")
		return status == "True", reason + ": " + msg
	})
	dep, ok := h.get(gvkDeployment, "magnum-gitops", "magnum-gitops")
	if !ok {
		t.Fatal("the chart's Deployment is not in magnum-gitops")
	}
	containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	var image string
	if len(containers) == 1 {
		image, _, _ = unstructured.NestedString(containers[0].(map[string]any), "image")
	}
	if image != "ghcr.io/magnum-gitops/magnum-gitops:"+v {
		t.Errorf("the Deployment runs %q (%d containers), want the image of version %s", image, len(containers), v)
	}
	cm, ok := h.get(gvkConfigMap, "magnum-gitops", "magnum-gitops")
	if !ok || !strings.Contains(fmt.Sprint(cm.Object["data"]), "https://git.example.org/cloud/magnum-clusters.git") {
		t.Errorf("the --config ConfigMap does not hold the HelmRelease's values: %v", cm)
	}

	h.waitFor("HelmRelease magnum-gitops-bad refused", defaultWaitStep, func() (bool, string) {
		hr, ok := h.get(gvkHelmRelease, fluxNamespace, "magnum-gitops-bad")
		if !ok {
			return false, "no HelmRelease"
		}
		status, reason, msg, _ := condition(hr, "Ready")
		return status == "False" && strings.Contains(msg, "replicaCount"), status + " " + reason + ": " + msg
	})
	if _, ok := h.get(gvkDeployment, "magnum-gitops-bad", "magnum-gitops-bad"); ok {
		t.Error("the refused HelmRelease installed a Deployment")
	}
}

// serviceHelmRelease is a HelmRelease of the service's chart into namespace, with the
// values the chart requires and replicaCount as given (YAML).
func serviceHelmRelease(name, namespace, version, replicas string) string {
	return fmt.Sprintf(`apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: %[1]s, namespace: %[3]s}
spec:
  interval: 10m
  releaseName: %[1]s
  targetNamespace: %[2]s
  storageNamespace: %[2]s
  install: {createNamespace: true, disableWait: true, remediation: {retries: 0}}
  chart:
    spec:
      chart: magnum-gitops
      version: "%[4]s"
      sourceRef: {kind: HelmRepository, name: magnum-gitops-charts}
  values:
    replicaCount: %[5]s
    config:
      git: {url: "https://git.example.org/cloud/magnum-clusters.git"}
      sops: {age_recipients: [age1e7uzf50uuk9pw9ghyujcnxwjlp9t99h946ad9zxmqrcr850h644qq5tnsz]}
    secrets:
      apiToken: {name: magnum-gitops}
      gitToken: {name: magnum-gitops}
      digestKey: {name: magnum-gitops}
`, name, namespace, fluxNamespace, version, replicas)
}

// startRegistry runs Debian's docker-registry on a free loopback port, its storage in the
// harness's work directory, and returns its host:port.
func (h *harness) startRegistry(bin string) string {
	t := h.t
	addr := freeAddr(t)
	cfg := filepath.Join(h.work, "registry.yml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, `version: 0.1
log: {level: info}
storage:
  filesystem: {rootdirectory: %s}
http:
  addr: %s
`, filepath.Join(h.work, "registry"), addr), 0o644); err != nil {
		t.Fatal(err)
	}
	p := h.startProcess("docker-registry", bin, []string{"serve", cfg}, os.Environ())
	h.waitHTTP(p, "http://"+addr+"/v2/", time.Minute)
	return addr
}
