package generator_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/generator"
)

// TestStorageClassNamesUnique: whatever Cinder's order and whichever type is the default,
// the StorageClasses have distinct names, the default type keeps the default class, the
// first of the other colliding types keeps its class, and every type left out is reported
// as a deviation naming it.
func TestStorageClassNamesUnique(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		types      []string
		def        string // csi_cinder_default_volume_type; empty: the first type
		additional []string
		dropped    []string
	}{
		{"no collision", []string{"__DEFAULT__", "ssd"}, "", []string{"ssd"}, nil},
		{"collision after the default", []string{"__DEFAULT__", "SSD", "ssd"}, "", []string{"SSD"}, []string{"ssd"}},
		{"the default collides with a type before it", []string{"__DEFAULT__", "ssd", "SSD"}, "SSD", []string{"__DEFAULT__"}, []string{"ssd"}},
		{"the default collides with a type after it", []string{"SSD", "__DEFAULT__", "ssd"}, "SSD", []string{"__DEFAULT__"}, []string{"ssd"}},
		{"the default collides with the first type", []string{"Default", "__DEFAULT__"}, "__DEFAULT__", nil, []string{"Default"}},
		{"the first type is the default and collides", []string{"ssd.fast", "ssd-fast", "hdd"}, "", []string{"hdd"}, []string{"ssd-fast"}},
		{"three of one name", []string{"a.b", "A_B", "a-b", "c"}, "c", []string{"a.b"}, []string{"A_B", "a-b"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, err := renderResult(t, func(ev *v1alpha1.ClusterEvent, cfg *generator.Config) {
				ev.Resolved.VolumeTypes = tc.types
				if tc.def != "" {
					cfg.Magnum.CapiHelm.CSICinderDefaultVolumeType = ptrTo(tc.def)
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			cs := at(jsonData(t, res.Values), "addons.openstack.csiCinder").(map[string]any)
			def := tc.def
			if def == "" {
				def = tc.types[0]
			}
			if got := cs["defaultStorageClass"].(map[string]any)["volumeType"]; got != def {
				t.Errorf("default class of volume type %v, want %q", got, def)
			}
			names := []string{cs["defaultStorageClass"].(map[string]any)["name"].(string)}
			var additional []string
			for _, c := range cs["additionalStorageClasses"].([]any) {
				c := c.(map[string]any)
				names = append(names, c["name"].(string))
				additional = append(additional, c["volumeType"].(string))
			}
			if !slices.Equal(additional, tc.additional) {
				t.Errorf("additional classes of %q, want %q", additional, tc.additional)
			}
			sorted := slices.Sorted(slices.Values(names))
			if len(slices.Compact(sorted)) != len(names) {
				t.Errorf("StorageClass names %q are not distinct", names)
			}
			var reported []string
			for _, d := range res.Deviations {
				if d.Key == "addons.openstack.csiCinder.additionalStorageClasses" {
					reported = append(reported, d.Reason)
				}
			}
			if len(reported) != len(tc.dropped) {
				t.Fatalf("deviations %q, want one per dropped type %q", reported, tc.dropped)
			}
			for i, d := range tc.dropped {
				if !strings.Contains(reported[i], "and \""+d+"\" both become") {
					t.Errorf("deviation %q does not name the dropped type %q", reported[i], d)
				}
			}
		})
	}
}

// TestParityStorageClasses checks docs/driver-rules.md, "Storage classes (Cinder CSI)".
func TestParityStorageClasses(t *testing.T) {
	t.Parallel()
	v := renderValues(t, func(ev *v1alpha1.ClusterEvent, cfg *generator.Config) {
		ev.Resolved.VolumeTypes = []string{"__DEFAULT__", "ssd.fast", "HDD_Slow"}
		cfg.Magnum.CapiHelm.CSICinderDefaultVolumeType = ptrTo("ssd.fast")
		ev.Cluster.Labels = v1alpha1.Labels{"csi_cinder_reclaim_policy": "Delete", "csi_cinder_fstype": "xfs"}
	})
	cs := at(v, "addons.openstack.csiCinder").(map[string]any)
	def := cs["defaultStorageClass"].(map[string]any)
	if def["name"] != "ssd-fast" || def["reclaimPolicy"] != "Delete" || def["fstype"] != "xfs" {
		t.Errorf("default class = %v", def)
	}
	if diff := cmp.Diff([]any{}, def["allowedTopologies"]); diff != "" {
		t.Errorf("default class allowedTopologies (-want +got):\n%s", diff)
	}
	var names []string
	for _, c := range cs["additionalStorageClasses"].([]any) {
		names = append(names, c.(map[string]any)["name"].(string))
	}
	if diff := cmp.Diff([]string{"default", "hdd-slow"}, names); diff != "" {
		t.Errorf("additional classes, want Cinder's order without the default (-want +got):\n%s", diff)
	}
}
