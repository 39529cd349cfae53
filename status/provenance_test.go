package status_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

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
