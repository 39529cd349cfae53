package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// splitStateFixture writes a fixtures/status file as the two files status --objects and
// --magnum read.
func splitStateFixture(t *testing.T, name string) (objects, event string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("../../fixtures/status", name))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Magnum  json.RawMessage `json:"magnum"`
		Objects json.RawMessage `json:"objects"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	objects, event = filepath.Join(dir, "objects.yaml"), filepath.Join(dir, "event.yaml")
	o, _ := yaml.JSONToYAML(doc.Objects)
	e, _ := yaml.JSONToYAML(doc.Magnum)
	os.WriteFile(objects, o, 0o644)
	os.WriteFile(event, e, 0o644)
	return objects, event
}

func TestStatusOffline(t *testing.T) {
	t.Parallel()
	objects, event := splitStateFixture(t, "27-all-ready-v1beta1.yaml")
	out, _, err := run(t, "", "status", "--objects", objects, "--magnum", event, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var rep map[string]any
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	// The event from standard input gives the same report.
	piped, err := os.ReadFile(event)
	if err != nil {
		t.Fatal(err)
	}
	if fromStdin, _, err := run(t, string(piped), "status", "--objects", objects, "--magnum", "-", "-o", "json"); err != nil || fromStdin != out {
		t.Errorf("--magnum -: %v\n%s\nwant:\n%s", err, fromStdin, out)
	}
	for k, want := range map[string]any{"status": "CREATE_COMPLETE", "status_reason": "", "api_address": "https://203.0.113.10:6443",
		"coe_version": "v1.33.7", "node_count": 3.0, "health_status": "HEALTHY"} {
		if rep[k] != want {
			t.Errorf("%s = %v, want %v", k, rep[k], want)
		}
	}
	if _, ok := rep["health_status_reason"].(map[string]any); !ok {
		t.Errorf("health_status_reason is not a map: %v", rep["health_status_reason"])
	}
	groups, _ := rep["nodegroups"].([]any)
	if len(groups) != 2 || groups[1].(map[string]any)["status"] != "CREATE_COMPLETE" {
		t.Errorf("nodegroups = %v", groups)
	}
	tree, _, err := run(t, "", "status", "--objects", objects, "--magnum", event, "-o", "tree")
	if err != nil || !strings.Contains(tree, "├─ ControlPlane KubeadmControlPlane/prod-a-2b7xq4mzkd5h-control-plane") ||
		!strings.Contains(tree, "HelmRelease/prod-a-2b7xq4mzkd5h-cni-calico") {
		t.Errorf("tree: %v\n%s", err, tree)
	}
	table, _, err := run(t, "", "status", "--objects", objects, "--magnum", event)
	if err != nil || !strings.Contains(table, "prod-a  prod-a-2b7xq4mzkd5h  CREATE_COMPLETE  HEALTHY") {
		t.Errorf("table: %v\n%s", err, table)
	}
	// Without --magnum, every managed HelmRelease is discovered.
	disc, _, err := run(t, "", "status", "--objects", objects, "-o", "json")
	if err != nil || !strings.Contains(disc, `"stack_id": "prod-a-2b7xq4mzkd5h"`) {
		t.Errorf("discovery: %v\n%s", err, disc)
	}
	if _, _, err := run(t, "", "status", "--objects", objects, "-o", "yaml"); err == nil {
		t.Error("unknown -o accepted")
	}
}
