package status_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"

	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/status"
)

// stateFixture is one file of fixtures/status: a Magnum view, the objects of the
// management cluster, and what the mapping must say.
type stateFixture struct {
	Provenance    provenance      `json:"provenance"`
	Now           time.Time       `json:"now"`
	Magnum        json.RawMessage `json:"magnum"`
	Objects       json.RawMessage `json:"objects"`
	Revision      string          `json:"revision"`
	AddonsUnknown bool            `json:"addons_unknown"`
	Expect        struct {
		Status           string            `json:"status"`
		StatusReason     *string           `json:"status_reason"`
		HealthStatus     string            `json:"health_status"`
		HealthReason     map[string]string `json:"health_reason"`
		APIAddress       string            `json:"api_address"`
		COEVersion       string            `json:"coe_version"`
		NodeGroups       map[string]string `json:"nodegroups"`
		Gone             map[string]bool   `json:"gone"`
		NodeCount        *int              `json:"node_count"`
		MasterCount      *int              `json:"master_count"`
		SecretsRemovable *bool             `json:"secrets_removable"`
	} `json:"expect"`
}

func loadStates(t testing.TB) map[string]stateFixture {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join("..", "fixtures", "status", "*.yaml"))
	if len(files) < 40 {
		t.Fatalf("%d status fixtures, want at least 40", len(files))
	}
	out := map[string]stateFixture{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var sf stateFixture
		if err := yaml.UnmarshalStrict(data, &sf); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[filepath.Base(f)] = sf
	}
	return out
}

func (sf stateFixture) inputs(t testing.TB, serveView bool) (status.View, status.Objects, status.Options) {
	t.Helper()
	ev, err := v1alpha1.DecodeEvent(sf.Magnum)
	if err != nil {
		t.Fatal(err)
	}
	v := status.ViewFromEvent(ev, "magnum")
	if serveView {
		v = status.NewView(ev, v.Namespace, v.StackID, v.Since)
	}
	v.Revision = sf.Revision
	objs, err := status.LoadObjects(bytes.NewReader(sf.Objects))
	if err != nil {
		t.Fatal(err)
	}
	o := status.Classify(objs, v.StackID, v.Namespace)
	o.AddonsUnknown = sf.AddonsUnknown
	return v, o, status.OptionsFor(ev, status.DefaultOptions(sf.Now))
}

// TestEvaluateStates judges every fixture from the view serve builds of its event
// (status.NewView) and from the view the status command builds of its document
// (status.ViewFromEvent); a fixture whose document holds a status no event of serve's
// holds is judged from the document's alone, and says so in its provenance.
func TestEvaluateStates(t *testing.T) {
	t.Parallel()
	for name, sf := range loadStates(t) {
		for _, serve := range []bool{true, false} {
			if serve && sf.Provenance.Handwritten == "not-producible" {
				continue
			}
			t.Run(name+map[bool]string{true: "/serve", false: "/document"}[serve], func(t *testing.T) {
				t.Parallel()
				sf.check(t, serve)
			})
		}
	}
}

// check judges the fixture from one of its views and compares the report with expect.
func (sf stateFixture) check(t *testing.T, serveView bool) {
	t.Helper()
	v, o, opts := sf.inputs(t, serveView)
	r := status.Evaluate(v, o, opts)
	e := sf.Expect
	check := func(what string, got, want any) {
		t.Helper()
		if got != want {
			t.Errorf("%s = %v, want %v\nstatus_reason: %s", what, got, want, r.StatusReason)
		}
	}
	if e.Status != "" {
		check("status", string(r.Status), e.Status)
	}
	if e.StatusReason != nil {
		if *e.StatusReason == "" && r.StatusReason != "" || !strings.Contains(r.StatusReason, *e.StatusReason) {
			t.Errorf("status_reason = %q, want it to contain %q", r.StatusReason, *e.StatusReason)
		}
	}
	if e.HealthStatus != "" {
		check("health_status", string(r.HealthStatus), e.HealthStatus)
	}
	for k, want := range e.HealthReason {
		if !strings.Contains(r.HealthReason[k], want) {
			t.Errorf("health_status_reason[%s] = %q, want %q", k, r.HealthReason[k], want)
		}
	}
	if e.APIAddress != "" {
		check("api_address", r.APIAddress, e.APIAddress)
	}
	if e.COEVersion != "" {
		check("coe_version", r.COEVersion, e.COEVersion)
	}
	groups := map[string]status.NodeGroupReport{}
	for _, g := range r.NodeGroups {
		groups[g.Name] = g
	}
	for n, want := range e.NodeGroups {
		check("nodegroup "+n, string(groups[n].Status), want)
	}
	for n, want := range e.Gone {
		check("nodegroup "+n+" gone", groups[n].Gone, want)
	}
	if e.NodeCount != nil {
		check("node_count", r.NodeCount, *e.NodeCount)
	}
	if e.MasterCount != nil {
		check("master_count", r.MasterCount, *e.MasterCount)
	}
	if e.SecretsRemovable != nil {
		check("secrets_removable", r.SecretsRemovable, *e.SecretsRemovable)
	}
	if len(r.HealthReason) != 4 {
		t.Errorf("health_status_reason has %d keys, want cluster, infrastructure, controlplane, nodegroup", len(r.HealthReason))
	}
}
