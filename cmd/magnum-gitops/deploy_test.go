package main

import (
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/internal/config"
	"github.com/magnum-gitops/magnum-gitops/internal/sopsenc"
)

// TestDeployedConfig: the service's ConfigMap in deploy/service (rendered from the chart,
// deploy/chart/magnum-gitops) holds a configuration that loads, listens on every address of
// the pod, and whose SOPS recipients the encrypter takes.
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
	if c.Serve.Listen != ":8080" || c.Serve.OpsListen != ":8081" {
		t.Errorf("deploy/service/config.yaml: listen %q, ops_listen %q, want :8080 and :8081", c.Serve.Listen, c.Serve.OpsListen)
	} else if c.Flux.Layout != generator.LayoutBranchPerNamespace || c.Flux.Git.URL != c.Git.URL {
		t.Errorf("deploy/service/config.yaml: layout %q fetching %q, want branch-per-namespace fetching git.url", c.Flux.Layout, c.Flux.Git.URL)
	} else if _, err := sopsenc.New(sopsenc.Options{AgeRecipients: c.Sops.AgeRecipients, DigestKey: make([]byte, 32)}); err != nil {
		t.Errorf("deploy/service/config.yaml sops.age_recipients: %v", err)
	}
}
