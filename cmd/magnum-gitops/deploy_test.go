package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/internal/config"
	"github.com/magnum-gitops/magnum-gitops/internal/sopsenc"
)

// TestDeployedConfig: the service's ConfigMap in deploy/service (rendered from the chart,
// deploy/chart/magnum-gitops) holds a configuration that loads, listens on every address of
// the pod over TLS, and whose SOPS recipients the encrypter takes.
func TestDeployedConfig(t *testing.T) {
	t.Parallel()
	cm, err := os.ReadFile("../../deploy/service/config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Data map[string]string `json:"data"`
	}
	if err := yaml.Unmarshal(cm, &doc); err != nil {
		t.Fatal(err)
	}
	deployed := filepath.Join(t.TempDir(), "deployed.yaml")
	os.WriteFile(deployed, []byte(doc.Data["config.yaml"]), 0o644)
	c, err := config.Load(deployed)
	if err != nil {
		t.Fatalf("deploy/service/config.yaml: %v", err)
	}
	if c.Serve.Listen != ":8443" || c.Serve.OpsListen != ":8081" || c.Serve.TLS.CertFile == "" {
		t.Errorf("deploy/service/config.yaml: listen %q (TLS %q), ops_listen %q, want HTTPS on :8443 and :8081", c.Serve.Listen, c.Serve.TLS.CertFile, c.Serve.OpsListen)
	} else if c.Flux.Layout != generator.LayoutBranchPerNamespace || c.Flux.Git.URL != c.Git.URL {
		t.Errorf("deploy/service/config.yaml: layout %q fetching %q, want branch-per-namespace fetching git.url", c.Flux.Layout, c.Flux.Git.URL)
	} else if _, err := sopsenc.New(sopsenc.Options{AgeRecipients: c.Sops.AgeRecipients, DigestKey: make([]byte, 32)}); err != nil {
		t.Errorf("deploy/service/config.yaml sops.age_recipients: %v", err)
	}
}

// TestDeployedServeNamesMissingSecret: serve started with deploy/service's configuration
// without a file its Secrets provide stops at once, as bad input, naming the setting and
// the file: what a pod whose Secret lacks a key (or a container run without its Secrets)
// logs before it exits.
func TestDeployedServeNamesMissingSecret(t *testing.T) {
	t.Parallel()
	var doc struct {
		Data map[string]string `json:"data"`
	}
	cm, err := os.ReadFile("../../deploy/service/config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(cm, &doc); err != nil {
		t.Fatal(err)
	}
	// A local remote, so that serve gets past its clone to the API token.
	remote := filepath.Join(t.TempDir(), "remote.git")
	work := t.TempDir()
	for _, args := range [][]string{{"init", "-q", "--bare", "-b", "main", remote}, {"init", "-q", "-b", "main", work},
		{"-C", work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "init"},
		{"-C", work, "push", "-q", remote, "main"}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	for _, tc := range []struct {
		name, missing, setting string
		have                   []string
		localRemote            bool
	}{
		{"no Secret at all", "digest-key", "sops.digest_key_file", nil, false},
		{"no Git token", "git-token", "git.auth.token_file", []string{"digest-key"}, false},
		{"no API token", "api-token", "serve.token_files", []string{"digest-key"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			secrets := filepath.Join(dir, "secrets")
			if err := os.Mkdir(secrets, 0o700); err != nil {
				t.Fatal(err)
			}
			for _, f := range tc.have {
				if err := os.WriteFile(filepath.Join(secrets, f), []byte(strings.Repeat("k", 44)), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			text := strings.NewReplacer("/etc/magnum-gitops/secrets", secrets, "/var/cache/magnum-gitops", filepath.Join(dir, "cache")).
				Replace(doc.Data["config.yaml"])
			var file map[string]any
			if err := yaml.Unmarshal([]byte(text), &file); err != nil {
				t.Fatal(err)
			}
			if tc.localRemote {
				// Flux still fetches the URL the file names.
				git := file["git"].(map[string]any)
				file["flux"].(map[string]any)["git"].(map[string]any)["url"] = git["url"]
				git["url"] = remote
				delete(git, "auth")
			}
			out, err := yaml.Marshal(file)
			if err != nil {
				t.Fatal(err)
			}
			cfg := filepath.Join(dir, "config.yaml")
			if err := os.WriteFile(cfg, out, 0o600); err != nil {
				t.Fatal(err)
			}
			_, _, err = run(t, "", "serve", "--config", cfg, "--leader-elect=false")
			want := filepath.Join(secrets, tc.missing)
			if !errors.Is(err, v1alpha1.ErrInvalidInput) || !strings.Contains(err.Error(), tc.setting) || !strings.Contains(err.Error(), want) {
				t.Fatalf("serve without %s: %v, want bad input naming %s and %s", tc.missing, err, tc.setting, want)
			}
			t.Log(err)
		})
	}
}
