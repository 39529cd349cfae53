package reconciler_test

import (
	"context"
	"maps"
	"path"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/reconciler"
	"github.com/magnum-gitops/magnum-gitops/reconciler/internal/gate"
)

// mapTree is a repository held in memory; ReadFile hands out the stored slices, so a test
// can tell bytes taken from the tree from bytes serialised again.
type mapTree map[string][]byte

func (t mapTree) ReadFile(p string) ([]byte, bool, error) { b, ok := t[p]; return b, ok, nil }
func (t mapTree) ListDir(dir string) ([]string, error) {
	var names []string
	for p := range t {
		if path.Dir(p) == dir {
			names = append(names, path.Base(p))
		}
	}
	return names, nil
}
func (t mapTree) ListFiles(dir string) ([]string, error) {
	var files []string
	for p := range t {
		if dir == "." || strings.HasPrefix(p, dir+"/") {
			files = append(files, p)
		}
	}
	slices.Sort(files)
	return files, nil
}

// written renders ev with p and plans it against an empty repository: the result, the
// plan, and a repository that holds what the plan wrote.
func written(t testing.TB, p *reconciler.Pipeline, ev *v1alpha1.ClusterEvent) (*generator.Result, *reconciler.Plan, mapTree) {
	t.Helper()
	res, err := p.Render(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := p.Plan(ev, res, nil) // nil: an empty repository
	if err != nil {
		t.Fatal(err)
	}
	return res, pl, mapTree(maps.Clone(pl.Changes))
}

// sameArray reports whether a and b are the same bytes in memory, not only equal ones.
func sameArray(a, b []byte) bool { return len(a) > 0 && len(b) == len(a) && &a[0] == &b[0] }

// TestUnchanged: a plan takes from the tree every file whose object the gate saw become those
// bytes, serialises what changed, and never rewrites a record for its encoding alone.
func TestUnchanged(t *testing.T) {
	t.Parallel()
	create := event(t, "01-prod-a-create.yaml")
	yamlRecord := func(ev *v1alpha1.ClusterEvent) []byte {
		c := *ev
		c.Secrets = nil
		b, err := yaml.Marshal(&c)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	cases := []struct {
		name string
		// gate is whether the second plan shares the first plan's gate.
		gate bool
		// edit changes the tree the second plan reads; it returns the path it changed.
		edit func(tree mapTree, hr, record string) string
		// changed is the path the second plan must change ("" for none).
		changed func(hr, record string) string
		// fromTree is whether every file of the second plan is the tree's own bytes.
		fromTree bool
		// next, when set, is the id of the event the second plan plans (the first's when
		// empty).
		next string
	}{{
		name: "an unchanged cluster is taken from the tree", gate: true, fromTree: true,
	}, {
		name: "without a gate every file is serialised again",
	}, {
		name: "a file edited in Git is written again", gate: true,
		edit: func(tree mapTree, hr, _ string) string {
			tree[hr] = append([]byte("# edited by hand\n"), tree[hr]...)
			return hr
		},
		changed: func(hr, _ string) string { return hr },
	}, {
		name: "an older YAML record of the same event stays", gate: true,
		edit: func(tree mapTree, _, record string) string {
			tree[record] = yamlRecord(create)
			return record
		},
	}, {
		name: "an older YAML record of another event is rewritten", gate: true,
		edit: func(tree mapTree, _, record string) string {
			other := *create
			other.ID = "another-event"
			tree[record] = yamlRecord(&other)
			return record
		},
		changed: func(_, record string) string { return record },
	}, {
		name: "the record the gate wrote for the event before is rewritten", gate: true, next: "the-next-event",
		changed: func(_, record string) string { return record },
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := generator.DefaultConfig()
			p := &reconciler.Pipeline{Config: generator.MustSite(cfg), Secrets: encrypting(t), Gate: &gate.Gate{}}
			res, first, tree := written(t, p, create)
			dir := generator.ClusterDir(res.Root, res.Namespace, res.ReleaseName)
			hr, record := path.Join(dir, generator.HelmReleaseFile), path.Join(dir, reconciler.RecordFile)
			if tc.edit != nil {
				tc.edit(tree, hr, record)
			}
			if !tc.gate {
				p.Gate = nil
			}
			ev := create
			if tc.next != "" {
				next := *create
				next.ID, ev = tc.next, &next
				var err error
				if res, err = p.Render(context.Background(), ev); err != nil {
					t.Fatal(err)
				}
			}
			second, err := p.Plan(ev, res, tree)
			if err != nil {
				t.Fatal(err)
			}
			want := ""
			if tc.changed != nil {
				want = tc.changed(hr, record)
			}
			if got := strings.Join(second.Paths(), " "); got != want {
				t.Errorf("changed paths = %q, want %q", got, want)
			}
			if want != "" && want != record && string(second.Changes[want]) != string(first.Changes[want]) {
				t.Errorf("%s written again as\n%s\nwant\n%s", want, second.Changes[want], first.Changes[want])
			}
			if want == record && !strings.Contains(string(second.Changes[record]), `"id": "`+ev.ID+`"`) {
				t.Errorf("the record written again is not the event's:\n%s", second.Changes[record])
			}
			// Secrets are left out: without a gate, the encrypter decrypts the tree's file
			// and keeps it (TestGateSecrets has them). So is .sops.yaml, which the
			// encrypter writes once.
			var taken, total int
			for f, b := range second.Files.Files {
				if _, secret := generator.SecretSuffix(path.Base(f)); secret || f == reconciler.SOPSConfigFile {
					continue
				}
				total++
				if sameArray(b, tree[f]) {
					taken++
				} else if tc.fromTree {
					t.Logf("%s serialised again", f)
				}
			}
			switch {
			case tc.fromTree && taken != total:
				t.Errorf("%d of %d files taken from the tree; want all", taken, total)
			case !tc.gate && taken != 0:
				t.Errorf("%d files taken from the tree without a gate; want none", taken)
			}
		})
	}
}

// TestUnchangedSecrets: an encrypted Secret the gate saw written is kept without being
// decrypted or encrypted again, and only for the recipients it was written for.
func TestUnchangedSecrets(t *testing.T) {
	t.Parallel()
	create := event(t, "01-prod-a-create.yaml")
	cfg := generator.DefaultConfig()
	g := &gate.Gate{}
	p := &reconciler.Pipeline{Config: generator.MustSite(cfg), Secrets: encrypting(t), Gate: g}
	res, _, tree := written(t, p, create)
	var secrets []string
	for f := range tree {
		if _, ok := generator.SecretSuffix(path.Base(f)); ok {
			secrets = append(secrets, f)
		}
	}
	if len(secrets) == 0 {
		t.Fatal("the fixture writes no Secret")
	}
	for _, tc := range []struct {
		name string
		// policy is the second plan's: the same recipients, or others.
		policy reconciler.SecretPolicy
		kept   bool
	}{
		{"the same recipients keep the file", p.Secrets, true},
		{"other recipients get a new file", encrypting(t), false},
	} {
		q := &reconciler.Pipeline{Config: generator.MustSite(cfg), Secrets: tc.policy, Gate: g}
		pl, err := q.Plan(create, res, tree)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range secrets {
			_, changed := pl.Changes[f]
			if kept := sameArray(pl.Files.Files[f], tree[f]); kept != tc.kept || changed == tc.kept {
				t.Errorf("%s: %s kept %v, changed %v; want kept %v", tc.name, f, kept, changed, tc.kept)
			}
		}
	}
}
