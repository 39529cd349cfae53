package argocd

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/internal/gitserver"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
)

// parentFile is the parent Application operators install, relative to the repository root.
const parentFile = "deploy/argocd/application.yaml"

// TestSOPSPlugin runs the real Argo CD with the sops plugin (argocd-cmp-server beside the
// repo-server, deploy/argocd/sops-plugin.yaml as operators install it, the real sops CLI)
// and a parent Application that syncs, through the plugin, a cluster directory laid out as
// serve writes it in Argo mode: the namespace, the cluster's Application, its
// kustomization.yaml and a Secret encrypted by internal/sopsenc for the plugin's age key.
// The Secret must reach its namespace decrypted, then take a rotated value from the next
// commit; a commit with a file for another key must fail the comparison by that file's
// name and sync nothing. Neither value may be in any file the harness's processes wrote
// (the repo-server's clones, the plugin's work directories, Redis's directory, the logs),
// while they run or after they stopped, nor in the Application's status.
func TestSOPSPlugin(t *testing.T) {
	testenv.Require(t, env)
	owner, recipient := newAgeKey(t)
	git := gitserver.Start(t)
	argo := Start(t, env, Options{AgeIdentity: owner})
	ctx := context.Background()
	repo := newWorkRepo(t, git, "clusters")

	parent := parentApplication(t, repo.url)
	root := str(parent, "spec", "source", "path")
	ns, release := "magnum-"+randomHex(4), "prod-a-"+randomHex(3)
	secretName := release + "-cloud-credentials"
	first, rotated := "pw-"+randomHex(16), "pw-"+randomHex(16)
	// canary is a value in a plain manifest: it must be found on disk (the repo-server's
	// clone), which shows the search for the secret values reads where they could be.
	canary := "canary-" + randomHex(16)

	repo.pushAt("child/"+release, "the cluster's own manifests", map[string]string{
		"configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  greeting: " + canary + "\n",
	})
	clusterFiles := func(password string) map[string]string {
		return map[string]string{
			ns + "/namespace.yaml":                     "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + ns + "\n",
			ns + "/" + release + "/application.yaml":   childYAML(release, ns, repo.url, "child/"+release),
			ns + "/" + release + "/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- secret-cloud-credentials.sops.yaml\n- application.yaml\n",
			ns + "/" + release + "/secret-cloud-credentials.sops.yaml": string(encryptSecret(t, recipient, ns, secretName,
				map[string]string{"password": password, "username": "admin"})),
		}
	}

	// 1. The first commit: the Secret decrypted in its namespace, the cluster's
	// Application passed through unchanged and syncing.
	commit1 := repo.pushAt(root, "a cluster with a SOPS Secret", clusterFiles(first))
	if err := argo.Client.Create(ctx, parent); err != nil {
		t.Fatal(err)
	}
	argo.WaitFor(parent.GetName(), waitLimit, syncedAt(commit1, "Healthy"))
	secretIs(t, argo, ns, secretName, map[string]string{"password": first, "username": "admin"}, parent.GetName())
	waitUntil(t, argo, waitLimit, "the cluster's Application synced its ConfigMap", func() bool {
		cm := &corev1.ConfigMap{}
		err := argo.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "settings"}, cm)
		return err == nil && cm.Data["greeting"] == canary
	})

	// 2. A rotated value in the next commit replaces the first.
	commit2 := repo.pushAt(root, "the password rotated", clusterFiles(rotated))
	argo.Refresh(parent.GetName(), "normal")
	argo.WaitFor(parent.GetName(), waitLimit, syncedAt(commit2, "Healthy"))
	secretIs(t, argo, ns, secretName, map[string]string{"password": rotated, "username": "admin"}, parent.GetName())

	// 3. A file the plugin's key does not open: the comparison fails naming it, and
	// nothing of that commit is synced (a new ConfigMap beside it stays away), nothing pruned.
	_, strangerRecipient := newAgeKey(t)
	unreadable := clusterFiles(rotated)
	unreadable[ns+"/"+release+"/secret-extra.sops.yaml"] = string(encryptSecret(t, strangerRecipient, ns, release+"-extra",
		map[string]string{"token": rotated}))
	unreadable[ns+"/marker.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: marker\n  namespace: " + ns + "\n"
	commit3 := repo.pushAt(root, "a Secret for another key", unreadable)
	argo.Refresh(parent.GetName(), "normal")
	argo.WaitFor(parent.GetName(), waitLimit, func(app *unstructured.Unstructured) (bool, string) {
		for _, c := range conditions(app) {
			if msg, _ := c["message"].(string); c["type"] == "ComparisonError" && strings.Contains(msg, "secret-extra.sops.yaml") {
				return true, ""
			}
		}
		return false, fmt.Sprintf("conditions %v, want a ComparisonError naming secret-extra.sops.yaml of %s", conditions(app), commit3)
	})
	if err := argo.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "marker"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("the ConfigMap of the commit that does not decrypt: %v, want it not synced", err)
	}
	secretIs(t, argo, ns, secretName, map[string]string{"password": rotated, "username": "admin"}, parent.GetName())
	app := argo.Application(parent.GetName())

	// 4. Neither value anywhere Argo CD wrote, in either encoding a manifest holds it.
	var needles [][]byte
	for _, v := range []string{first, rotated} {
		needles = append(needles, []byte(v), []byte(base64.StdEncoding.EncodeToString([]byte(v))))
	}
	status, err := yaml.Marshal(app.Object)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range needles {
		if strings.Contains(string(status), string(n)) {
			t.Errorf("the Application %s holds a secret value", parent.GetName())
		}
	}
	noLeak := func(when string) {
		t.Helper()
		if files := argo.FilesContaining(needles...); len(files) > 0 {
			t.Errorf("%s: a secret value is in %v", when, files)
		}
		if logs := argo.LogsContaining(needles...); len(logs) > 0 {
			t.Errorf("%s: a secret value is in the logs of %v", when, logs)
		}
		if files := argo.FilesContaining([]byte(canary)); len(files) == 0 {
			t.Errorf("%s: the canary %s is in no file: the search did not reach the repo-server's clones", when, canary)
		}
	}
	noLeak("while Argo CD runs")
	argo.Stop()
	noLeak("after Argo CD stopped")
	redisFiles, err := os.ReadDir(filepath.Join(argo.dir, "redis-data"))
	if err != nil {
		t.Fatal(err)
	}
	if len(redisFiles) > 0 {
		t.Errorf("Redis persisted %v: it must keep the repo-server's cache (decrypted manifests) in memory only", redisFiles[0].Name())
	}
}

// parentApplication is the parent Application of deploy/argocd/application.yaml as
// shipped, its source the plugin SOPSPlugin, with the test's repository.
func parentApplication(t *testing.T, repoURL string) *unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), parentFile))
	if err != nil {
		t.Fatal(err)
	}
	app := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(b, &app.Object); err != nil {
		t.Fatalf("%s: %v", parentFile, err)
	}
	if app.GroupVersionKind() != ApplicationGVK || app.GetNamespace() != Namespace || str(app, "spec", "source", "path") == "" {
		t.Fatalf("%s: not an Application in %s with a source path", parentFile, Namespace)
	}
	if got := str(app, "spec", "source", "plugin", "name"); got != SOPSPlugin {
		t.Fatalf("%s: its source's plugin is %q, want %q: a directory source cannot sync serve's kustomization.yaml files", parentFile, got, SOPSPlugin)
	}
	if err := unstructured.SetNestedField(app.Object, repoURL, "spec", "source", "repoURL"); err != nil {
		t.Fatal(err)
	}
	return app
}

// secretIs fails the test unless the Secret holds exactly want, applied by the Application owner.
func secretIs(t *testing.T, argo *Argo, namespace, name string, want map[string]string, owner string) {
	t.Helper()
	s := &corev1.Secret{}
	if err := argo.Client.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, s); err != nil {
		t.Fatalf("the synced Secret %s/%s: %v", namespace, name, err)
	}
	got := map[string]string{}
	for k, v := range s.Data {
		got[k] = string(v)
	}
	if !reflect.DeepEqual(got, want) {
		// The values are the test's own, random ones; still, the message names keys only.
		var wrong []string
		for k := range mergeKeys(got, want) {
			if g, ok := got[k]; !ok || g != want[k] {
				wrong = append(wrong, k)
			}
		}
		slices.Sort(wrong)
		t.Errorf("Secret %s/%s: keys %v missing, extra or not the committed plaintext", namespace, name, wrong)
	}
	if id := s.Annotations["argocd.argoproj.io/tracking-id"]; !strings.HasPrefix(id, owner+":") {
		t.Errorf("Secret %s/%s tracking-id = %q: not applied by Application %s", namespace, name, id, owner)
	}
}

// mergeKeys is the set of keys of a and b.
func mergeKeys(a, b map[string]string) map[string]bool {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	return keys
}
