package argocd

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"filippo.io/age"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/magnum-gitops/magnum-gitops/internal/sopsenc"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
)

func TestPluginConfig(t *testing.T) {
	t.Parallel()
	configMap := func(plugin string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: p\ndata:\n  plugin.yaml: |\n" + indent(plugin, "    ")
	}
	const good = "apiVersion: argoproj.io/v1alpha1\nkind: ConfigManagementPlugin\nmetadata:\n  name: sops\nspec:\n  generate:\n    command: [sh, -c]\n    args: [echo]\n"
	for _, tc := range []struct {
		name, file, wantErr string
		wantGenerate        []string
		wantRaw             string
	}{
		{"good", configMap(good), "", []string{"sh", "-c", "echo"}, good},
		{"another plugin", configMap(strings.Replace(good, "name: sops", "name: ksops", 1)), `metadata.name "ksops"`, nil, ""},
		{"a version", configMap(good + "  version: v1\n"), `spec.version "v1"`, nil, ""},
		{"no generate", configMap(strings.Replace(good, "command: [sh, -c]", "command: []", 1)), "spec.generate.command is empty", nil, ""},
		{"not a plugin", configMap(strings.Replace(good, "ConfigManagementPlugin", "Plugin", 1)), `kind "Plugin"`, nil, ""},
		{"no plugin.yaml", strings.Replace(configMap(good), "plugin.yaml", "config.yaml", 1), "no data key plugin.yaml", nil, ""},
		{"not a ConfigMap", strings.Replace(configMap(good), "kind: ConfigMap", "kind: Secret", 1), `kind "Secret"`, nil, ""},
		{"a field a ConfigMap lacks", configMap(good) + "spec: {}\n", "unknown field", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			file := filepath.Join(t.TempDir(), "plugin.yaml")
			if err := os.WriteFile(file, []byte(tc.file), 0o644); err != nil {
				t.Fatal(err)
			}
			p, err := pluginConfig(file, SOPSPlugin)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), file) {
					t.Fatalf("pluginConfig = %v, want an error naming %s and %q", err, file, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(p.generate, tc.wantGenerate) {
				t.Errorf("generate = %q, want %q", p.generate, tc.wantGenerate)
			}
			if string(p.raw) != tc.wantRaw {
				t.Errorf("raw plugin.yaml = %q, want the ConfigMap's %q", p.raw, tc.wantRaw)
			}
		})
	}
	// The operators' file itself: what TestSOPSPlugin and TestPluginGenerate run.
	if _, err := pluginConfig(filepath.Join(testenv.RepoRoot(), pluginFile), SOPSPlugin); err != nil {
		t.Errorf("the shipped plugin: %v", err)
	}
}

func indent(s, prefix string) string {
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "")
}

// TestPluginGenerate runs the generate command of deploy/argocd/sops-plugin.yaml as
// argocd-cmp-server does (in the Application's source directory, with the sidecar's env)
// on the directory layout serve writes in Argo mode, with the real sops CLI: the SOPS file
// decrypted, the rest printed unchanged, kustomization.yaml, serve's record and hidden files left out,
// and a file the key does not open failing the generation by name without a secret in the
// message. It needs the sops CLI of hack/sops.sh (SOPS_BIN): without it, it skips, unless
// ARGOCD_TESTS is set.
func TestPluginGenerate(t *testing.T) {
	t.Parallel()
	sopsDir := requireSOPS(t)
	plugin, err := pluginConfig(filepath.Join(testenv.RepoRoot(), pluginFile), SOPSPlugin)
	if err != nil {
		t.Fatal(err)
	}
	owner, recipient := newAgeKey(t)
	stranger, _ := newAgeKey(t)
	password := "pw-" + randomHex(12)
	app := t.TempDir()
	ns, release := "magnum-p1", "prod-a-x1"
	secret := encryptSecret(t, recipient, ns, release+"-cloud-credentials", map[string]string{"password": password, "user": "demo"})
	files := map[string]string{
		ns + "/namespace.yaml":                                     "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + ns + "\n",
		ns + "/" + release + "/application.yaml":                   childYAML(release, ns, "https://git.example.org/r.git", "child"),
		ns + "/" + release + "/kustomization.yaml":                 "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- application.yaml\n",
		ns + "/" + release + "/secret-cloud-credentials.sops.yaml": string(secret),
		ns + "/" + release + "/notes.md":                           "not a manifest\n",
		ns + "/" + release + "/magnum-cluster.yaml":                "{\"apiVersion\": \"magnum-gitops.io/v1alpha1\", \"kind\": \"ClusterEvent\", \"operation\": \"create_cluster\"}\n",
		".sops.yaml":             "creation_rules:\n- age: " + recipient + "\n",
		".hidden/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hidden\n",
	}
	for name, content := range files {
		p := filepath.Join(app, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name     string
		identity string // "" runs without SOPS_AGE_KEY_FILE
		want     []string
		wantErr  string
	}{
		{"the owner's key", owner, []string{"Namespace/" + ns, "Application/" + release, "Secret/" + release + "-cloud-credentials"}, ""},
		{"another key", stranger, nil, "secret-cloud-credentials.sops.yaml"},
		{"no key", "", nil, "secret-cloud-credentials.sops.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := []string{"PATH=" + sopsDir + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + t.TempDir()}
			if tc.identity != "" {
				key := filepath.Join(t.TempDir(), "age.agekey")
				if err := os.WriteFile(key, []byte(tc.identity+"\n"), 0o600); err != nil {
					t.Fatal(err)
				}
				env = append(env, "SOPS_AGE_KEY_FILE="+key)
			}
			cmd := exec.Command(plugin.generate[0], plugin.generate[1:]...)
			cmd.Dir, cmd.Env = app, env
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			if strings.Contains(stderr.String(), password) {
				t.Errorf("stderr holds the password: %s", stderr.String())
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(stderr.String(), tc.wantErr) {
					t.Fatalf("generate = %v, stderr %q; want a failure naming %s", err, stderr.String(), tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("generate: %v: %s", err, stderr.String())
			}
			objs := splitYAML(t, stdout.Bytes())
			var got []string
			for _, o := range objs {
				got = append(got, o.GetKind()+"/"+o.GetName())
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("objects = %v, want %v", got, tc.want)
			}
			s := objs[2]
			if _, ok := s.Object["sops"]; ok {
				t.Error("the decrypted Secret still has its sops metadata")
			}
			data, _, _ := unstructured.NestedStringMap(s.Object, "stringData")
			if want := map[string]string{"password": password, "user": "demo"}; !reflect.DeepEqual(data, want) {
				t.Errorf("stringData = %v, want the plaintext %v", data, want)
			}
			if s.GetNamespace() != ns {
				t.Errorf("Secret namespace = %q, want %s", s.GetNamespace(), ns)
			}
			// Unchanged: the Application as committed, field for field.
			child := splitYAML(t, []byte(files[ns+"/"+release+"/application.yaml"]))[0]
			if !reflect.DeepEqual(objs[1].Object, child.Object) {
				t.Errorf("the Application changed on its way through:\n%v\nwant\n%v", objs[1].Object, child.Object)
			}
		})
	}
}

// requireSOPS returns the directory of the sops CLI hack/sops.sh builds; without it the
// test skips, or fails under ARGOCD_TESTS, which asks for every Argo CD test to run.
func requireSOPS(t *testing.T) string {
	t.Helper()
	dir := sopsBinDir()
	if !executable(filepath.Join(dir, "sops")) {
		msg := "sops " + SOPSVersion + " not found in " + dir + " (build it with hack/sops.sh; SOPS_BIN names its directory)"
		if os.Getenv("ARGOCD_TESTS") != "" {
			t.Fatal(msg)
		}
		t.Skip("skipping: " + msg)
	}
	return dir
}

// newAgeKey makes an age X25519 key: its identity (AGE-SECRET-KEY-1...) and recipient (age1...).
func newAgeKey(t *testing.T) (identity, recipient string) {
	t.Helper()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	return id.String(), id.Recipient().String()
}

// encryptSecret encrypts a Secret for recipient as serve does in Argo mode
// (internal/sopsenc, stringData, the sync-wave and Prune=false annotations the generator
// puts on every Secret).
func encryptSecret(t *testing.T, recipient, namespace, name string, data map[string]string) []byte {
	t.Helper()
	enc, err := sopsenc.New(sopsenc.Options{AgeRecipients: []string{recipient}, DigestKey: []byte(randomHex(32))})
	if err != nil {
		t.Fatal(err)
	}
	b, err := enc.Encrypt(&corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Annotations: map[string]string{
			"argocd.argoproj.io/sync-wave":    "-1",
			"argocd.argoproj.io/sync-options": "Prune=false",
		}},
		Type:       corev1.SecretTypeOpaque,
		StringData: data,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range data {
		if bytes.Contains(b, []byte(v)) {
			t.Fatalf("the encrypted %s holds a value in plaintext", name)
		}
	}
	return b
}

// splitYAML parses a YAML stream as the repo-server parses a plugin's output (gitops-engine's
// kube.SplitYAML: apimachinery's YAML-or-JSON decoder, empty documents skipped).
func splitYAML(t *testing.T, b []byte) []*unstructured.Unstructured {
	t.Helper()
	d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	var objs []*unstructured.Unstructured
	for {
		var obj map[string]any
		err := d.Decode(&obj)
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatalf("parsing the output: %v\n%s", err, b)
		}
		if obj != nil {
			objs = append(objs, &unstructured.Unstructured{Object: obj})
		}
	}
}

// childYAML is a cluster's Application as magnum-gitops commits it, save its source: a
// directory of the test's repository instead of the chart, so that it can sync.
func childYAML(name, namespace, repoURL, path string) string {
	return `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: ` + name + `
  namespace: ` + Namespace + `
  annotations:
    argocd.argoproj.io/sync-wave: "0"
spec:
  project: default
  source:
    repoURL: ` + repoURL + `
    path: ` + path + `
    targetRevision: main
  destination:
    server: ` + InClusterServer + `
    namespace: ` + namespace + `
  syncPolicy:
    automated:
      prune: true
      selfHeal: true
    syncOptions:
    - ServerSideApply=true
`
}
