package service_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
	"github.com/magnum-gitops/magnum-gitops/reconciler/service"
	"github.com/magnum-gitops/magnum-gitops/status/kube"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	if os.Getenv("SERVE_START_REMOTE") != "" {
		// BenchmarkServeStart's child: its peak memory is serve's alone, with no API
		// server or client set up beside it.
		os.Exit(m.Run())
	}
	code := testenv.Main(m, &env)
	// The benchmarks' seed repositories and long history are shared by the whole binary:
	// they go here.
	for _, sd := range seeds {
		_ = os.RemoveAll(filepath.Dir(sd.dir))
	}
	if historyDir != "" {
		_ = os.RemoveAll(filepath.Dir(historyDir))
	}
	os.Exit(code)
}

var secretNames = []string{stackID + "-cloud-credentials", stackID + "-ca", stackID + "-etcd", stackID + "-proxy", stackID + "-sa"}

// TestDeleteChoreographyOnAPIServer: with the status reader on a real kube-apiserver, the
// Secrets stay while the CAPI Cluster exists, and leave the management cluster after it
// is deleted and Flux has applied the commit that removed them from Git.
func TestDeleteChoreographyOnAPIServer(t *testing.T) {
	testenv.Require(t, env)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	m := newMgmtCluster(t, ctx, "magnum-clusters", env, ns)
	// What Flux and CAPI made of the cluster: its Secrets and a Cluster being deleted.
	m.secrets(t, ctx, ns, secretNames)
	cl := &unstructured.Unstructured{}
	cl.SetAPIVersion("cluster.x-k8s.io/v1beta1")
	cl.SetKind("Cluster")
	cl.SetName(stackID)
	cl.SetNamespace(ns)
	cl.SetLabels(map[string]string{"capi.stackhpc.com/managed-by": "Helm", "capi.stackhpc.com/cluster": stackID})
	cl.SetFinalizers([]string{"cluster.cluster.x-k8s.io"})
	if err := env.Client.Create(ctx, cl); err != nil {
		t.Fatal(err)
	}
	// The HelmRelease, as Flux applied it: serve's Events name it by its UID.
	hr := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"interval": "10m",
		"chart": map[string]any{"spec": map[string]any{"chart": "openstack-cluster", "sourceRef": map[string]any{"kind": "HelmRepository", "name": "charts"}}}}}}
	hr.SetAPIVersion("helm.toolkit.fluxcd.io/v2")
	hr.SetKind("HelmRelease")
	hr.SetName(stackID)
	hr.SetNamespace(ns)
	if err := env.Client.Create(ctx, hr); err != nil {
		t.Fatal(err)
	}
	recorder := record.NewBroadcaster()
	defer recorder.Shutdown()
	recorder.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kubernetes.NewForConfigOrDie(env.Config).CoreV1().Events("")})
	h := start(t, func(o *service.Options) {
		o.Management = []service.ManagementCluster{{Status: kube.Source{Reader: m.r}, Kube: env.Client, Kustomization: "flux-system/magnum-clusters",
			Events: recorder.NewRecorder(clientgoscheme.Scheme, corev1.EventSource{Component: "magnum-gitops"})}}
	})
	for _, f := range []string{"01-prod-a-create.yaml", "08-prod-a-delete.yaml"} {
		if code, ans := h.post(fixture(t, f)); code != http.StatusOK {
			t.Fatalf("%s: %d %v", f, code, ans)
		}
	}
	if err := env.Client.Delete(ctx, cl.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // sweeps while the Cluster is being deleted
	files := func() string { return h.git.Git(h.git.Dir(h.repo), "ls-tree", "-r", "--name-only", "main") }
	if f := files(); !strings.Contains(f, dir+"/secret-ca.sops.yaml") {
		t.Fatal("the Secrets left Git while the Cluster exists")
	} else if strings.Contains(f, dir+"/helmrelease.yaml") {
		t.Fatal("the HelmRelease is still in Git after delete_cluster: it goes first")
	}
	for _, name := range secretNames {
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &corev1.Secret{}); err != nil {
			t.Fatalf("Secret %s deleted while the Cluster exists: %v", name, err)
		}
	}
	// CAPI finishes: the finalizer goes, and with it the Cluster.
	cur := &unstructured.Unstructured{}
	cur.SetGroupVersionKind(cl.GroupVersionKind())
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cl), cur); err != nil {
		t.Fatal(err)
	}
	cur.SetFinalizers(nil)
	if err := env.Client.Update(ctx, cur); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, ctx, func() bool { return !strings.Contains(files(), dir+"/secret-") })
	for _, name := range secretNames {
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &corev1.Secret{}); err != nil {
			t.Fatalf("Secret %s deleted before Flux applied the removal: %v", name, err)
		}
	}
	// Flux applies the commit that removed the directory (the test plays Flux's part).
	m.apply(t, ctx, strings.TrimSpace(h.git.Git(h.git.Dir(h.repo), "rev-parse", "main")))
	waitUntil(t, ctx, func() bool {
		for _, name := range secretNames {
			err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &corev1.Secret{})
			if !apierrors.IsNotFound(err) {
				return false
			}
		}
		return true
	})
	// Then the rest of the directory leaves Git.
	waitUntil(t, ctx, func() bool { return !strings.Contains(files(), dir+"/") })

	// The HelmRelease's Events tell each commit and the delete's end, as `kubectl describe
	// helmrelease` lists them (by its UID).
	want := []string{"Normal Committed Magnum create_cluster event", "Normal Committed Magnum delete_cluster event", "Normal DeleteFinished delete of Magnum cluster"}
	var got []string
	waitUntil(t, ctx, func() bool {
		var list corev1.EventList
		if err := env.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		got = got[:0]
		for _, e := range list.Items {
			if e.InvolvedObject.Kind == "HelmRelease" && e.InvolvedObject.Name == stackID && e.InvolvedObject.UID == hr.GetUID() {
				got = append(got, e.Type+" "+e.Reason+" "+e.Message)
			}
		}
		for _, w := range want {
			if !slices.ContainsFunc(got, func(g string) bool { return strings.HasPrefix(g, w) }) {
				return false
			}
		}
		return true
	})
	if len(got) != len(want) {
		t.Errorf("Events on the HelmRelease: %q, want one of each of %q", got, want)
	}
}

func waitUntil(t *testing.T, ctx context.Context, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatal("timed out")
		case <-time.After(100 * time.Millisecond):
		}
	}
}
