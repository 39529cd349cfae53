//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chartutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/internal/chartrender"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
)

// restGetter gives Helm's SDK the harness's kubeconfig (Helm's RESTClientGetter, as
// `helm --kubeconfig F --namespace NS` builds it).
type restGetter struct{ kubeconfig, namespace string }

func (g restGetter) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(&clientcmd.ClientConfigLoadingRules{ExplicitPath: g.kubeconfig},
		&clientcmd.ConfigOverrides{Context: clientcmdapi.Context{Namespace: g.namespace}})
}

func (g restGetter) ToRESTConfig() (*rest.Config, error) {
	cfg, err := g.ToRawKubeConfigLoader().ClientConfig()
	if err != nil {
		return nil, err
	}
	cfg.WarningHandlerWithContext = rest.NoWarnings{}
	return cfg, nil
}

func (g restGetter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	cfg, err := g.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return memory.NewMemCacheClient(dc), nil
}

func (g restGetter) ToRESTMapper() (meta.RESTMapper, error) {
	dc, err := g.ToDiscoveryClient()
	if err != nil {
		return nil, err
	}
	return restmapper.NewDeferredDiscoveryRESTMapper(dc), nil
}

// driverInstall does what magnum-capi-helm's create_cluster does before magnum-gitops
// exists: the namespace, the cluster's Secrets (application credential and the CA pairs,
// written straight to the API server), and `helm upgrade --install` of the chart with the
// driver's values, release name = stack_id. The values and Secrets are what
// `magnum-gitops render` says the driver sends (docs/driver-rules.md), rendered in
// plaintext here because the driver never encrypts.
func (h *harness) driverInstall(eventFile string, w clusterWant) {
	t := h.t
	t.Helper()
	cfg := map[string]any{
		"magnum": map[string]any{"capi_helm": map[string]any{"helm_chart_repo": h.chartURL,
			"default_helm_chart_version": w.chartVersion}},
		"management_cluster": map[string]any{"capo_api_versions": []string{"v1beta1"}},
	}
	data, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	driverConfig := filepath.Join(h.work, "driver.yaml")
	if err := os.WriteFile(driverConfig, data, 0o600); err != nil {
		t.Fatal(err)
	}
	render := func(output string) []byte {
		var stdout, stderr bytes.Buffer
		cmd := exec.CommandContext(h.ctx, h.bin.magnum, "render", "-f", eventFile, "--config", driverConfig, "-o", output,
			"--insecure-plaintext-secrets")
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("magnum-gitops render -o %s: %v\n%s", output, err, stderr.String())
		}
		return stdout.Bytes()
	}
	// Several clusters of a project share its namespace.
	if err := h.c.Create(h.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: w.namespace}}); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	secrets := 0
	manifests := filepath.Join(h.work, "driver-manifests.yaml")
	if err := os.WriteFile(manifests, render("yaml"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, o := range readObjects(t, manifests) {
		if o.GetKind() != "Secret" {
			continue
		}
		var s corev1.Secret
		if err := runtimeConvert(o.Object, &s); err != nil {
			t.Fatal(err)
		}
		// The driver's own Secrets: the same names and data, and only the labels the driver
		// sets (docs/driver-rules.md: cluster.x-k8s.io/cluster-name, which Cluster API's
		// managers select the Secrets they cache by, and magnum.openstack.org/*).
		labels := map[string]string{}
		for k, v := range s.Labels {
			if k == "cluster.x-k8s.io/cluster-name" || strings.HasPrefix(k, "magnum.openstack.org/") {
				labels[k] = v
			}
		}
		s.ObjectMeta = metav1.ObjectMeta{Name: s.Name, Namespace: w.namespace, Labels: labels}
		if err := h.c.Create(h.ctx, &s); err != nil {
			t.Fatalf("creating the driver's Secret %s: %v", s.Name, err)
		}
		secrets++
	}
	if secrets != 5 {
		t.Fatalf("the driver writes 5 Secrets, render gave %d", secrets)
	}

	ch, err := chartrender.LoadVersion(w.chartVersion)
	if err != nil {
		t.Fatal(err)
	}
	// JSON, as the driver hands values to helm (numbers as float64, explicit nulls).
	values, err := chartutil.ReadValues(render("values"))
	if err != nil {
		t.Fatal(err)
	}
	var helmCfg action.Configuration
	if err := helmCfg.Init(restGetter{kubeconfig: h.kubeconfig, namespace: w.namespace}, w.namespace, "secret",
		func(format string, v ...any) { t.Logf("helm: "+format, v...) }); err != nil {
		t.Fatal(err)
	}
	install := action.NewInstall(&helmCfg)
	install.ReleaseName, install.Namespace = w.release, w.namespace
	// The site's own patches, which a site running the driver keeps in a fork of the chart.
	if len(h.postRenderers) > 0 {
		install.PostRenderer = chartrender.HelmPostRenderer(h.postRenderers)
	}
	install.Timeout = 5 * time.Minute
	rel, err := install.Run(ch, values.AsMap())
	if err != nil {
		t.Fatalf("helm install %s (as the driver): %v", w.release, err)
	}
	if rel.Version != 1 || rel.Info.Status.String() != "deployed" {
		t.Fatalf("helm install %s: v%d %s", w.release, rel.Version, rel.Info.Status)
	}
}

// runtimeConvert converts an unstructured object to a typed one through JSON.
func runtimeConvert(in map[string]any, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

// TestE2EAdoption: a cluster the Python driver installed (Helm SDK, the driver's values
// and Secrets, release name = stack_id) is taken over by magnum-gitops without being
// recreated: the create event's HelmRelease makes helm-controller upgrade the existing
// release in place (Helm release v2 of the same release, v1 superseded, never
// uninstalled), the Cluster keeps its UID, and kustomize-controller takes the driver's
// Secrets over with the decrypted values from Git.
func TestE2EAdoption(t *testing.T) {
	b := findBinaries(t)
	h := newHarness(t, b, true)
	events := filepath.Join(testenv.RepoRoot(), "fixtures", "events")
	eventFile := filepath.Join(events, "01-prod-a-create.yaml")
	a := clusterWant{event: readEvent(t, eventFile), namespace: "magnum-9f3c1b2a4d5e4f6a8b7c6d5e4f3a2b1c",
		release: "prod-a-2b7xq4mzkd5h", chartVersion: "0.27.0", helmRevision: 2, kubeVersion: "v1.33.7",
		controlPlane: 3, cpFlavor: "m1.large", workers: map[string]workerWant{"default-worker": {3, "m1.medium"}},
		lbProvider: "amphora"}

	h.driverInstall(eventFile, a)
	cl, ok := h.get(gvkCluster, a.namespace, a.release)
	if !ok {
		t.Fatal("the driver's helm install made no Cluster")
	}
	uid := cl.GetUID()
	before := map[string]string{}
	for _, s := range h.helmStorage(a) {
		before[s.Name] = s.Labels["status"]
	}
	if len(before) != 1 || before["sh.helm.release.v1."+a.release+".v1"] != "deployed" {
		t.Fatalf("Helm storage after the driver's install: %v", before)
	}

	rev := h.commitEvent(eventFile)
	h.waitApplied(rev, 3*time.Minute)
	h.waitFor("helm-controller to upgrade the driver's release to v2", defaultWaitStep, h.releaseReady(a))
	h.checkCluster(a)

	cl, ok = h.get(gvkCluster, a.namespace, a.release)
	if !ok || cl.GetUID() != uid {
		t.Errorf("the Cluster was recreated: UID %v, was %s", cl.GetUID(), uid)
	}
	after := map[string]string{}
	for _, s := range h.helmStorage(a) {
		after[s.Name] = s.Labels["status"]
	}
	want := map[string]string{"sh.helm.release.v1." + a.release + ".v1": "superseded",
		"sh.helm.release.v1." + a.release + ".v2": "deployed"}
	if len(after) != len(want) || after["sh.helm.release.v1."+a.release+".v1"] != "superseded" ||
		after["sh.helm.release.v1."+a.release+".v2"] != "deployed" {
		t.Errorf("Helm storage after adoption = %v, want %v (an upgrade of the driver's release, no reinstall)", after, want)
	}
	hr, _ := h.get(gvkHelmRelease, a.namespace, a.release)
	_, reason, msg, _ := condition(hr, "Ready")
	if reason != "UpgradeSucceeded" {
		t.Errorf("HelmRelease Ready reason %s (%s), want UpgradeSucceeded", reason, msg)
	}
}

// TestE2EClusterAPIAdoption: a cluster the Python driver installed, running on the real
// Cluster API controllers, is taken over by magnum-gitops without a Machine replaced: the
// same Machines (UIDs) and MachineSets (names) before and after helm-controller upgraded
// the driver's release, and serve reports CREATE_COMPLETE from the real conditions.
func TestE2EClusterAPIAdoption(t *testing.T) {
	b := findBinaries(t)
	h := newHarness(t, b, true, withClusterAPI(3*time.Second))
	h.adoptDriverCluster("Flux", 2, func(a clusterWant, rev string) {
		h.waitApplied(rev, 3*time.Minute)
		h.waitFor("helm-controller to upgrade the driver's release to v2", defaultWaitStep, h.releaseReady(a))
	})
}

// adoptDriverCluster is the adoption both GitOps tools go through: the driver's helm
// install of fixture 01 on the real Cluster API controllers; migrate --dry-run finds it
// identical; serve commits it; takenOver waits for the GitOps tool (tool, in the log) to
// take the driver's objects over from the commit rev; CREATE_COMPLETE follows, and no
// Machine or MachineSet is replaced. helmRevision is the driver's release's revision once
// taken over (Flux upgrades it to 2; 0 when the tool does not use Helm's releases).
func (h *harness) adoptDriverCluster(tool string, helmRevision int64, takenOver func(a clusterWant, rev string)) {
	t := h.t
	events := filepath.Join(testenv.RepoRoot(), "fixtures", "events")
	eventFile := writeEvent(t, t.TempDir(), "create.yaml", withMagnumCAs(t, readEvent(t, filepath.Join(events, "01-prod-a-create.yaml"))))
	a := clusterWant{event: readEvent(t, eventFile), namespace: "magnum-9f3c1b2a4d5e4f6a8b7c6d5e4f3a2b1c",
		release: "prod-a-2b7xq4mzkd5h", chartVersion: "0.27.0", helmRevision: helmRevision}
	uuid := getPath(a.event, "cluster", "uuid").(string)
	settled := h.capiSettled(a.namespace, a.release, 3, map[string]int64{"default-worker": 3})

	h.driverInstall(eventFile, a)
	h.waitFor("the driver's cluster to settle under Cluster API", defaultWaitStep, settled)
	uids, sets := h.machineIdentity(a.namespace, a.release)

	// The adoption: the same cluster as Magnum holds it, marked adopted, with a Heat-era
	// availability_zone label the driver ignored. migrate, reading the driver's release
	// from the management cluster, must find it identical (the label held back, said in a
	// warning); the commit then replaces no machine.
	adoptEv := readEvent(t, eventFile)
	setPath(adoptEv, map[string]any{"driver": "k8s_capi_helm_v1"}, "adopted")
	setPath(adoptEv, "az-1", "cluster", "labels", "availability_zone")
	adoptFile := writeEvent(t, t.TempDir(), "adopt.yaml", adoptEv)
	h.migrateIdentical(adoptFile, uuid)

	t0 := time.Now()
	rev := h.commitEvent(adoptFile)
	takenOver(a, rev)
	_, magnum, _ := h.waitCAPIAndStatus(uuid, a.namespace, a.release, "CREATE_COMPLETE", settled, t0, nil)
	t.Logf("adopted by %s: CREATE_COMPLETE %s after the commit", tool, magnum.Round(time.Second))
	// Let a rollout that the takeover would have started show itself.
	time.Sleep(10 * time.Second)
	h.waitFor("the cluster to settle again", defaultWaitStep, settled)
	uidsAfter, setsAfter := h.machineIdentity(a.namespace, a.release)
	if !slices.Equal(uids, uidsAfter) || !slices.Equal(sets, setsAfter) {
		t.Errorf("machines replaced by the adoption:\nMachines before %v\n         after  %v\nMachineSets before %v\n            after  %v", uids, uidsAfter, sets, setsAfter)
	}
	t.Logf("%d Machines and MachineSets %v unchanged", len(uids), sets)
}

// migrateIdentical runs `magnum-gitops migrate --dry-run` for one cluster against the
// management cluster and fails unless it reports the cluster identical to its live
// release, with the availability_zone label held back.
func (h *harness) migrateIdentical(eventFile, uuid string) {
	t := h.t
	t.Helper()
	reports := h.migrate(eventFile, "--dry-run")
	if len(reports) != 1 || reports[0].ClusterUUID != uuid || reports[0].Outcome != "identical" ||
		!strings.Contains(strings.Join(reports[0].Warnings, "\n"), "cluster.labels.availability_zone: ignored") {
		t.Fatalf("migrate --dry-run: %+v, want the cluster identical to its release, availability_zone held back", reports)
	}
	t.Logf("migrate --dry-run: %s identical to the driver's release", uuid)
}
