package generator_test

import (
	"maps"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/generator"
)

// adopt marks an event as a cluster magnum-capi-helm created.
func adopt(ev *v1alpha1.ClusterEvent) {
	ev.Adopted = &v1alpha1.Adoption{Driver: "k8s_capi_helm_v1"}
}

// withoutFeatureLabels removes every feature label from the event and returns their fields.
func withoutFeatureLabels(ev *v1alpha1.ClusterEvent) []string {
	var fields []string
	strip := func(labels v1alpha1.Labels, at string) {
		for k := range maps.Clone(labels) {
			if generator.IsFeatureLabel(k) {
				delete(labels, k)
				fields = append(fields, at+k)
			}
		}
	}
	strip(ev.Cluster.Labels, "cluster.labels.")
	strip(ev.ClusterTemplate.Labels, "cluster_template.labels.")
	for i := range ev.NodeGroups {
		strip(ev.NodeGroups[i].Labels, "nodegroups["+ev.NodeGroups[i].Name+"].labels.")
	}
	return fields
}

// TestAdoptedClusterGetsTheDriversValues: every feature fixture, rendered for a cluster
// the driver created and not opted in, gives exactly what the same event gives without
// any feature label and without the site's registries section — the driver's values, so
// adopting replaces no machine — and warns about each label it ignored. Opted in with
// all, it gives what a cluster magnum-gitops created gets.
func TestAdoptedClusterGetsTheDriversValues(t *testing.T) {
	t.Parallel()
	for _, name := range featureFixtures {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ev := featureEvent(t, name)
			adopt(ev)
			got, err := render(ev, featureConfig(t, name))
			if err != nil {
				t.Fatal(err)
			}
			plainEv := featureEvent(t, name)
			ignored := withoutFeatureLabels(plainEv)
			if len(ignored) == 0 && name != "registries" {
				t.Fatalf("fixture %s has no feature label", name)
			}
			want, err := render(plainEv, defaultConfig())
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(jsonData(t, want.Values), jsonData(t, got.Values)); diff != "" {
				t.Errorf("values differ from the driver's (-want +got):\n%s", diff)
			}
			if g, w := got.Objects.HelmRelease.Spec, want.Objects.HelmRelease.Spec; len(g.PostRenderers) != len(w.PostRenderers) || len(g.ValuesFrom) != len(w.ValuesFrom) {
				t.Errorf("HelmRelease has %d post-renderers and %d valuesFrom, want the driver's %d and %d", len(g.PostRenderers), len(g.ValuesFrom), len(w.PostRenderers), len(w.ValuesFrom))
			}
			if len(got.Objects.Secrets) != len(want.Objects.Secrets) {
				t.Errorf("%d Secrets, want the driver's %d", len(got.Objects.Secrets), len(want.Objects.Secrets))
			}
			warnings := strings.Join(got.Warnings, "\n")
			for _, f := range ignored {
				if strings.HasPrefix(f, "cluster.labels."+"adopted_features") {
					continue
				}
				if !strings.Contains(warnings, f+": ignored") {
					t.Errorf("no warning names %s; warnings:\n%s", f, warnings)
				}
			}
			if name == "registries" && !strings.Contains(warnings, "registries: ignored") {
				t.Errorf("no warning for the site's registries section; warnings:\n%s", warnings)
			}
			for _, d := range got.Deviations {
				if strings.Contains(d.Reason, "no such feature") {
					t.Errorf("deviation %s reported for a feature that was held back", d.Key)
				}
			}

			// Opted in with all: what a cluster magnum-gitops created gets.
			ev = featureEvent(t, name)
			adopt(ev)
			ev.Cluster.Labels["adopted_features"] = "all"
			all, err := render(ev, featureConfig(t, name))
			if err != nil {
				t.Fatal(err)
			}
			created, err := render(featureEvent(t, name), featureConfig(t, name))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(jsonData(t, created.Values), jsonData(t, all.Values)); diff != "" {
				t.Errorf("adopted_features=all: values differ from a created cluster's (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAdoptedFeatures: adopted_features opts in exactly the features it names, from the
// cluster, the template or the site; each applied feature label is a deviation, each
// held-back one a warning; a name that is no feature is refused by field.
func TestAdoptedFeatures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		set    func(ev *v1alpha1.ClusterEvent, cfg *generator.Config)
		zone   bool   // nodeGroups[].failureDomain rendered
		cpZone bool   // controlPlane.failureDomains rendered
		errAt  string // a refusal naming this field
	}{
		{"not opted in", func(*v1alpha1.ClusterEvent, *generator.Config) {}, false, false, ""},
		{"placement on the cluster", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) {
			ev.Cluster.Labels["adopted_features"] = "placement"
		}, true, true, ""},
		{"placement on the template", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) {
			ev.ClusterTemplate.Labels["adopted_features"] = " oidc , placement "
		}, true, true, ""},
		{"placement for the site", func(_ *v1alpha1.ClusterEvent, cfg *generator.Config) {
			cfg.Features.LabelDefaults = map[string]string{"adopted_features": "placement"}
		}, true, true, ""},
		{"another feature only", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) {
			ev.Cluster.Labels["adopted_features"] = "oidc"
		}, false, false, ""},
		{"a typo", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) {
			ev.Cluster.Labels["adopted_features"] = "placment"
		}, false, false, "cluster.labels.adopted_features"},
		{"adopted without a driver", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) {
			ev.Adopted.Driver = " "
		}, false, false, "adopted.driver"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ev, cfg := featureEvent(t, "placement"), defaultConfig()
			adopt(ev)
			tc.set(ev, cfg)
			res, err := render(ev, cfg)
			if tc.errAt != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errAt+":") {
					t.Fatalf("err = %v, want a refusal naming %s", err, tc.errAt)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			v := jsonData(t, res.Values)
			zoned := false
			for _, g := range at(v, "nodeGroups").([]any) {
				if _, ok := g.(map[string]any)["failureDomain"]; ok {
					zoned = true
				}
			}
			if zoned != tc.zone {
				t.Errorf("nodeGroups[].failureDomain rendered: %v, want %v", zoned, tc.zone)
			}
			if got := has(v, "controlPlane.failureDomains"); got != tc.cpZone {
				t.Errorf("controlPlane.failureDomains rendered: %v, want %v", got, tc.cpZone)
			}
			warned := strings.Contains(strings.Join(res.Warnings, "\n"), "cluster.labels.availability_zone: ignored")
			if warned == tc.zone {
				t.Errorf("warning about availability_zone: %v, want %v (%q)", warned, !tc.zone, res.Warnings)
			}
			if got := hasDeviation(res, "cluster.labels.availability_zone"); got != tc.zone {
				t.Errorf("deviation for availability_zone: %v, want %v (%v)", got, tc.zone, res.Deviations)
			}
		})
	}
}
