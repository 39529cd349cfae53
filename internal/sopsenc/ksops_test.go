package sopsenc_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/internal/sopsenc"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
)

// ksopsVersion is the KSOPS release hack/ksops.sh builds; its cache directory is named after it.
const ksopsVersion = "v4.5.1"

// ksopsBin is the directory holding ksops and kustomize: $KSOPS_BIN (what hack/ksops.sh
// prints on its last line), else the cache it builds into.
func ksopsBin() string { return testenv.BinDir("KSOPS_BIN", "ksops", ksopsVersion) }

// requireKSOPS returns the binary directory, or skips the test when ksops or kustomize is
// missing. It skips even when CI is set, unlike the other tests on cached binaries: KSOPS
// is not served by the project's module proxy (hack/ksops.sh builds it only from a source
// directory, KSOPS_SRC), so .ci/run does not build it and this test is not wired into CI.
func requireKSOPS(t *testing.T) string {
	t.Helper()
	dir := ksopsBin()
	for _, b := range []string{"ksops", "kustomize"} {
		fi, err := os.Stat(filepath.Join(dir, b))
		if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			t.Skipf("skipping: %s not found in %q (build it with hack/ksops.sh; KSOPS_BIN names its directory)", b, dir)
		}
	}
	return dir
}

// ksopsGenerator is the KRM exec function manifest KSOPS's README gives for kustomize v5:
// kind ksops, the function annotation naming the binary (found on PATH), and the files.
const ksopsGenerator = `apiVersion: viaduct.ai/v1
kind: ksops
metadata:
  name: magnum-gitops-secrets
  annotations:
    config.kubernetes.io/function: |
      exec:
        path: ksops
files:
  - ./%s
`

const ksopsKustomization = `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
generators:
  - ./secret-generator.yaml
`

// kustomizeBuild lays out an application directory as an Argo CD user would (the
// encrypted file, the ksops generator and a kustomization naming it) under a repository
// root, and runs `kustomize build <app> --enable-alpha-plugins --enable-exec` from that
// root, as Argo CD's repo-server does with kustomize.buildOptions set (util/kustomize: the
// build options after the path, the repository root as working directory, its own
// environment inherited), with only the age identity in keyFile to decrypt with.
func kustomizeBuild(t *testing.T, bin, fileName string, encrypted []byte, keyFile string) ([]byte, error) {
	t.Helper()
	repo := t.TempDir()
	app := filepath.Join("clusters", "mc1", "secrets")
	appDir := filepath.Join(repo, app)
	if err := os.MkdirAll(appDir, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		fileName:                encrypted,
		"secret-generator.yaml": fmt.Appendf(nil, ksopsGenerator, fileName),
		"kustomization.yaml":    []byte(ksopsKustomization),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(appDir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "kustomize"), "build", app, "--enable-alpha-plugins", "--enable-exec")
	cmd.Dir = repo
	cmd.Env = ksopsEnv(t, bin, keyFile)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, &buildError{err: err, stderr: stderr.String()}
	}
	return out, nil
}

type buildError struct {
	err    error
	stderr string
}

func (e *buildError) Error() string { return e.err.Error() + ": " + e.stderr }

// ksopsEnv is the process environment with bin first on PATH and SOPS_AGE_KEY_FILE the
// one key: the user's own sops keys (other SOPS_* variables, ~/.config/sops/age/keys.txt,
// ~/.ssh) are kept out by a fresh HOME and XDG_CONFIG_HOME.
func ksopsEnv(t *testing.T, bin, keyFile string) []string {
	t.Helper()
	home := t.TempDir()
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		for _, p := range []string{"SOPS_", "PATH=", "HOME=", "XDG_CONFIG_HOME=", "KSOPS_"} {
			if strings.HasPrefix(kv, p) {
				return true
			}
		}
		return false
	})
	return append(env, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "HOME="+home,
		"XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "SOPS_AGE_KEY_FILE="+keyFile)
}

// TestKSOPSDecrypts checks that KSOPS, run by kustomize as Argo CD runs it, opens the files
// Encrypt writes: the output is the Secret with its original values and no sops metadata,
// and a stranger's key yields an error that shows no value.
func TestKSOPSDecrypts(t *testing.T) {
	bin := requireKSOPS(t)
	id := newKey(t)
	keyFile := filepath.Join(t.TempDir(), "keys.txt")
	if err := os.WriteFile(keyFile, []byte(id.String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	stranger := newKey(t)
	strangerFile := filepath.Join(t.TempDir(), "keys.txt")
	if err := os.WriteFile(strangerFile, []byte(stranger.String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dataSecret := &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: "r-registry-credentials", Namespace: "magnum-p",
			Labels: map[string]string{"magnum.openstack.org/cluster-uuid": "3e9b7c52-1d4a-4f8e-9b6c-2a7d5e8f1c03"}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{"password": []byte("hunter2-d4t4-v4lue"), "binary": {0, 1, 2, 0xfe, 0xff}},
	}

	for _, tc := range []struct {
		name   string
		secret *corev1.Secret
		// digest: the Encrypter has a digest key, so the file carries DigestAnnotation.
		digest  bool
		keyFile string
		// wantErr: kustomize build must fail (no key opens the file).
		wantErr bool
	}{
		{name: "stringData with digest", secret: testSecret(), digest: true, keyFile: keyFile},
		{name: "data with digest", secret: dataSecret, digest: true, keyFile: keyFile},
		{name: "data, identity mode", secret: dataSecret, keyFile: keyFile},
		{name: "stranger's key", secret: testSecret(), digest: true, keyFile: strangerFile, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := sopsenc.Options{AgeRecipients: []string{id.Recipient().String()}}
			if tc.digest {
				o.DigestKey = digestKey
			} else {
				o.Identity = id.String()
			}
			enc, err := encrypter(t, o).Encrypt(tc.secret)
			if err != nil {
				t.Fatal(err)
			}
			out, err := kustomizeBuild(t, bin, tc.secret.Name+sopsenc.FileSuffix, enc, tc.keyFile)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("kustomize build decrypted with a stranger's key:\n%s", out)
				}
				for _, leak := range []string{"s3cr3t-value-9f", "MIIB"} {
					if strings.Contains(err.Error(), leak) || bytes.Contains(out, []byte(leak)) {
						t.Errorf("%q appears in the failed build's output", leak)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("kustomize build: %v", err)
			}
			if docs := bytes.Count(out, []byte("\n---\n")); docs != 0 {
				t.Fatalf("kustomize build gave %d documents, want 1:\n%s", docs+1, out)
			}
			var doc map[string]any
			if err := yaml.Unmarshal(out, &doc); err != nil {
				t.Fatal(err)
			}
			if _, ok := doc["sops"]; ok {
				t.Errorf("the sops metadata survived kustomize build:\n%s", out)
			}
			var got corev1.Secret
			if err := yaml.UnmarshalStrict(out, &got); err != nil {
				t.Fatalf("kustomize build output is not a Secret: %v\n%s", err, out)
			}
			ann := got.Annotations[sopsenc.DigestAnnotation]
			if tc.digest != strings.HasPrefix(ann, "hmac-sha256:") {
				t.Errorf("digest annotation = %q, want one: %v", ann, tc.digest)
			}
			delete(got.Annotations, sopsenc.DigestAnnotation)
			if len(got.Annotations) == 0 {
				got.Annotations = nil
			}
			want, _ := yaml.Marshal(tc.secret)
			have, _ := yaml.Marshal(&got)
			if !bytes.Equal(want, have) {
				t.Errorf("kustomize build changed the Secret:\nwant %s\ngot  %s", want, have)
			}
		})
	}
}
