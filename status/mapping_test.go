package status_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
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

// provenance says where a fixtures/status state comes from (fixtures/status/README.md): a
// state recorded from the real controllers of the end-to-end tests, or one written by
// hand, either because those controllers cannot produce it here (failures of OpenStack
// itself, the addon provider's phases, a Magnum view serve never has) or beside the
// recorded state of the same situation, which it names.
type provenance struct {
	// Recorded names the end-to-end test and the state it recorded (E2E_RECORD_DIR).
	Recorded string `json:"recorded"`
	// Handwritten is "producible" when the real controllers of the end-to-end tests produce
	// the state, "not-producible" when they cannot.
	Handwritten string `json:"handwritten"`
	// Counterpart is the recorded fixture of the same state, for a producible one.
	Counterpart string `json:"counterpart"`
	// Why says what a hand-written state shows that its counterpart does not, or why the
	// real controllers cannot produce it here.
	Why string `json:"why"`
	// Unrecorded says why a producible state has no recorded counterpart yet.
	Unrecorded string `json:"unrecorded"`
}

// TestFixtureProvenance holds every status fixture to its provenance, so that no status
// test relies only on a hand-written object where the real controllers can produce the
// state: a recorded fixture names its test, which must exist; a hand-written one says why
// it is written by hand, and one the real controllers produce names its recorded
// counterpart, which must exist and be recorded (or says why it is not recorded). The
// audit table in fixtures/status/README.md lists every fixture.
func TestFixtureProvenance(t *testing.T) {
	t.Parallel()
	states := loadStates(t)
	e2e := e2eTestNames(t)
	readme, err := os.ReadFile(filepath.Join("..", "fixtures", "status", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\| *\[?([0-9]{2}-[a-z0-9-]+\.yaml)`).FindAllStringSubmatch(string(readme), -1) {
		listed[m[1]] = true
	}
	for name, sf := range states {
		p := sf.Provenance
		t.Run(name, func(t *testing.T) {
			if !listed[name] {
				t.Errorf("missing from the audit table of fixtures/status/README.md")
			}
			switch {
			case p.Recorded == "" && p.Handwritten == "":
				t.Fatal("no provenance: want provenance.recorded (the e2e test and state) or provenance.handwritten")
			case p.Recorded != "" && p.Handwritten != "":
				t.Fatal("provenance is both recorded and handwritten")
			case p.Recorded != "":
				test, _, _ := strings.Cut(p.Recorded, ",")
				if !slices.Contains(e2e, test) {
					t.Errorf("recorded by %q, which is no test of test/e2e", test)
				}
				if !strings.Contains(name, "-real-") {
					t.Errorf("a recorded state's file is named NN-real-*.yaml")
				}
				if p.Counterpart != "" || p.Why != "" || p.Unrecorded != "" {
					t.Errorf("a recorded state has no counterpart or why: it is the real one")
				}
				return
			}
			if strings.Contains(name, "-real-") {
				t.Errorf("a hand-written state's file name says real")
			}
			if p.Why == "" {
				t.Errorf("hand-written without provenance.why")
			}
			switch p.Handwritten {
			case "producible":
				if p.Counterpart == "" {
					if p.Unrecorded == "" {
						t.Errorf("the real controllers produce this state: record it (fixtures/status/README.md) and name it in " +
							"provenance.counterpart, or say in provenance.unrecorded why it is not recorded")
					}
					return
				}
				c, ok := states[p.Counterpart]
				if !ok {
					t.Fatalf("counterpart %s does not exist", p.Counterpart)
				}
				if c.Provenance.Recorded == "" {
					t.Errorf("counterpart %s is not a recorded state", p.Counterpart)
				}
			case "not-producible":
				if p.Counterpart != "" || p.Unrecorded != "" {
					t.Errorf("not-producible, yet it has a counterpart (%q) or is unrecorded (%q)", p.Counterpart, p.Unrecorded)
				}
			default:
				t.Errorf("provenance.handwritten = %q, want producible or not-producible", p.Handwritten)
			}
		})
	}
	for name := range listed {
		if _, ok := states[name]; !ok {
			t.Errorf("fixtures/status/README.md lists %s, which does not exist", name)
		}
	}
}

// e2eTestNames lists the test functions of test/e2e, which record the real states.
func e2eTestNames(t *testing.T) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join("..", "test", "e2e", "*_test.go"))
	var names []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`(?m)^func (Test\w+)\(t \*testing\.T\)`).FindAllStringSubmatch(string(data), -1) {
			names = append(names, m[1])
		}
	}
	if len(names) == 0 {
		t.Fatal("no tests found in test/e2e")
	}
	return names
}

// TestUnobservedSpec: right after Helm changes a MachineDeployment's or the control
// plane's spec, its status still counts every replica up to date until Cluster API has
// observed the new generation: the update must not complete on that (seen with the real
// controllers: a flavor change judged UPDATE_COMPLETE before the workers rolled).
func TestUnobservedSpec(t *testing.T) {
	t.Parallel()
	sf, ok := loadStates(t)["65-real-resize-complete.yaml"]
	if !ok {
		t.Fatal("no fixture 65-real-resize-complete.yaml")
	}
	for _, tc := range []struct{ kind, reason string }{
		{"MachineDeployment", "waiting for Cluster API to reconcile MachineDeployment "},
		{"KubeadmControlPlane", "waiting for Cluster API to reconcile KubeadmControlPlane "},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			v, o, opts := sf.inputs(t, true)
			if r := status.Evaluate(v, o, opts); r.Status != v1alpha1.UpdateComplete {
				t.Fatalf("the fixture as recorded: %s %q, want UPDATE_COMPLETE", r.Status, r.StatusReason)
			}
			objs := append([]*unstructured.Unstructured{o.ControlPlane}, o.MachineDeployments...)
			for _, u := range objs {
				if u.GetKind() == tc.kind {
					observed, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
					u.SetGeneration(observed + 1)
				}
			}
			r := status.Evaluate(v, o, opts)
			if r.Status != v1alpha1.UpdateInProgress || !strings.Contains(r.StatusReason, tc.reason) {
				t.Errorf("with the %s's new spec not observed yet: %s %q, want UPDATE_IN_PROGRESS %q…", tc.kind, r.Status, r.StatusReason, tc.reason)
			}
		})
	}
}

// TestOneLine: a controller's message in a status reason is one line, and one too long
// keeps its start, cut between runes (Magnum stores the reason as text: never half a rune).
func TestOneLine(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 200) // 400 bytes, two a rune
	for _, tc := range []struct{ in, want string }{
		{"a\n  b\tc ", "a b c"},
		{long, strings.Repeat("é", 120) + "…"},
		{"x" + long, "x" + strings.Repeat("é", 119) + "…"},
	} {
		got := status.OneLine(tc.in)
		if got != tc.want {
			t.Errorf("OneLine(%.20q…) = %.40q…, want %.40q…", tc.in, got, tc.want)
		}
		if !utf8.ValidString(got) {
			t.Errorf("OneLine(%.20q…) is not UTF-8", tc.in)
		}
	}
}
