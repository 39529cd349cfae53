package main

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/internal/leakcheck"
	"github.com/magnum-gitops/magnum-gitops/internal/sopsenc"
	"github.com/magnum-gitops/magnum-gitops/reconciler"

	"filippo.io/age"
)

// sopsConfigFile writes a configuration with a fresh age recipient and digest key.
func sopsConfigFile(t testing.TB) (string, *age.X25519Identity) {
	t.Helper()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	key := filepath.Join(dir, "digest.key")
	if err := os.WriteFile(key, []byte("q8Vd3kP0x2mB7nL4rT9wY1zA6cE5fH3jK0sU8vX2bN4="), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "config.yaml")
	doc := "sops:\n  age_recipients: [" + id.Recipient().String() + "]\n  digest_key_file: " + key + "\n"
	if err := os.WriteFile(cfg, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg, id
}

func TestRenderRefusesPlaintextSecrets(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, _, err := run(t, "", "render", "-f", fixture, "--out-dir", dir)
	if !errors.Is(err, reconciler.ErrPlaintextRefused) || !strings.Contains(err.Error(), "5 Secrets would be written in plaintext") {
		t.Fatalf("err = %v, want the plaintext refusal", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("something was written: %v", entries)
	}
	if _, _, err := run(t, "", "render", "-f", fixture, "-o", "yaml"); !errors.Is(err, reconciler.ErrPlaintextRefused) {
		t.Errorf("-o yaml: %v, want the plaintext refusal", err)
	}
	// An event without Secret material needs no encryption.
	if _, _, err := run(t, "", "render", "-f", "../../fixtures/events/02-prod-a-resize-workers.yaml", "--out-dir", dir); err != nil {
		t.Error(err)
	}
}

func TestRenderEncryptsAndIsIdempotent(t *testing.T) {
	cfg, id := sopsConfigFile(t)
	dir := t.TempDir()
	snapshot := func() map[string][]byte {
		out := map[string][]byte{}
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				out[p], _ = os.ReadFile(p)
			}
			return nil
		})
		return out
	}
	if _, _, err := run(t, "", "render", "-f", fixture, "--config", cfg, "--out-dir", dir); err != nil {
		t.Fatal(err)
	}
	first := snapshot()
	cdir := filepath.Join(dir, "clusters/magnum/magnum-9f3c1b2a4d5e4f6a8b7c6d5e4f3a2b1c/prod-a-2b7xq4mzkd5h")
	enc, ok := first[filepath.Join(cdir, "secret-cloud-credentials.sops.yaml")]
	if !ok {
		t.Fatalf("no encrypted Secret written; files: %v", keys(first))
	}
	if _, ok := first[filepath.Join(dir, ".sops.yaml")]; !ok {
		t.Error("no .sops.yaml creation rules at the repository root")
	}
	k, _ := os.ReadFile(filepath.Join(cdir, "kustomization.yaml"))
	if !strings.Contains(string(k), "secret-ca.sops.yaml") {
		t.Errorf("kustomization does not list the encrypted files:\n%s", k)
	}
	plain, err := sopsenc.Decrypt(enc, id.String())
	if err != nil || !strings.Contains(string(plain), "application_credential_secret: fixture-appcred-secret-NOT-REAL-7f3a") {
		t.Fatalf("decrypt: %v\n%s", err, plain)
	}
	// Rendering the same event again changes no byte.
	if _, _, err := run(t, "", "render", "-f", fixture, "--config", cfg, "--out-dir", dir); err != nil {
		t.Fatal(err)
	}
	second := snapshot()
	for p, b := range first {
		if !bytes.Equal(b, second[p]) {
			t.Errorf("%s changed on an identical re-render", p)
		}
	}
	if len(first) != len(second) {
		t.Errorf("file count changed: %d → %d", len(first), len(second))
	}
}

// TestNoSecretInClear renders every fixture the way the demo does and scans every file
// written, and everything printed, for the fixtures' secret values.
func TestNoSecretInClear(t *testing.T) {
	t.Parallel()
	secrets, err := leakcheck.Secrets()
	if err != nil {
		t.Fatal(err)
	}
	if len(secrets) < 5 {
		t.Fatalf("only %d secret values found in the fixtures", len(secrets))
	}
	repo := filepath.Join(t.TempDir(), "clusters.git")
	out, stderr, err := run(t, "", "demo", "--repo", repo)
	if err != nil {
		t.Fatal(err)
	}
	check := func(where string, b []byte) {
		for _, s := range secrets {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("%s contains a secret value in clear (%.12s…)", where, s)
			}
		}
	}
	check("demo output", []byte(out+stderr))
	// Every object in the repository: all blobs (every version of every file), trees and
	// commit messages.
	objects, err := exec.Command("git", "-C", repo, "cat-file", "--batch-all-objects", "--batch").Output()
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(objects, []byte(" blob ")); n < 40 {
		t.Errorf("scanned only %d blobs", n)
	}
	check("the demo repository", objects)
	cfg, _ := sopsConfigFile(t)
	yamlOut, _, err := run(t, "", "render", "-f", fixture, "--config", cfg, "-o", "yaml")
	if err != nil {
		t.Fatal(err)
	}
	check("render -o yaml", []byte(yamlOut))
	jsonOut, _, _ := run(t, "", "render", "-f", fixture, "-o", "json")
	check("render -o json", []byte(jsonOut))
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
