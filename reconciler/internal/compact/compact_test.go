package compact

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"reflect"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/fixtures"
	"github.com/magnum-gitops/magnum-gitops/internal/fixturetest"
)

// fixtureEvent decodes one fixture event.
func fixtureEvent(t testing.TB, name string) *v1alpha1.ClusterEvent {
	t.Helper()
	return fixturetest.Event(t, name)
}

// TestCompactorEvent: the copy the index keeps equals the event without its Secret
// material, for every fixture; the event it was made from is untouched, and the copy holds
// no slice, pointer or map of the original's, so neither sees what happens to the other.
func TestCompactorEvent(t *testing.T) {
	t.Parallel()
	names, err := fs.Glob(fixtures.Events, "events/*.yaml")
	if err != nil || len(names) == 0 {
		t.Fatal(names, err)
	}
	c := New()
	for _, name := range names {
		name = name[len("events/"):]
		t.Run(name, func(t *testing.T) {
			ev, pristine := fixtureEvent(t, name), fixtureEvent(t, name)
			got := c.Event(ev)
			want := *pristine
			want.Secrets = nil
			if diff := cmp.Diff(&want, got); diff != "" {
				t.Errorf("the copy differs (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(pristine, ev); diff != "" {
				t.Errorf("the original changed (-before +after):\n%s", diff)
			}
			if shared := sharedParts(reflect.ValueOf(ev).Elem(), reflect.ValueOf(got).Elem(), "event"); len(shared) > 0 {
				t.Errorf("the copy shares with the original: %v", shared)
			}
		})
	}
}

// sharedParts lists the slices, pointers and maps a and b (values of one type) share.
func sharedParts(a, b reflect.Value, at string) []string {
	var out []string
	switch a.Kind() {
	case reflect.Struct:
		for i := range a.NumField() {
			if a.Type().Field(i).IsExported() {
				out = append(out, sharedParts(a.Field(i), b.Field(i), at+"."+a.Type().Field(i).Name)...)
			}
		}
	case reflect.Pointer, reflect.Slice, reflect.Map:
		if a.IsNil() || b.IsNil() {
			return nil
		}
		if a.UnsafePointer() == b.UnsafePointer() && (a.Kind() != reflect.Slice || a.Cap() > 0) {
			return []string{at}
		}
		switch a.Kind() {
		case reflect.Pointer:
			out = sharedParts(a.Elem(), b.Elem(), at)
		case reflect.Slice:
			for i := range a.Len() {
				out = append(out, sharedParts(a.Index(i), b.Index(i), fmt.Sprintf("%s[%d]", at, i))...)
			}
		}
	}
	return out
}

// TestCompactorShares: records with equal string maps share one; a map that differs in a
// key, a value or its type is a map of its own. Strings are interned either way.
func TestCompactorShares(t *testing.T) {
	t.Parallel()
	labels := func(extra ...string) v1alpha1.Labels {
		l := v1alpha1.Labels{"kube_tag": "v1.33.7", "boot_volume_size": "20"}
		for i := 0; i+1 < len(extra); i += 2 {
			l[extra[i]] = extra[i+1]
		}
		return l
	}
	tests := []struct {
		name  string
		other func(ev *v1alpha1.ClusterEvent)
		share bool
	}{
		{"equal template labels", func(ev *v1alpha1.ClusterEvent) { ev.ClusterTemplate.Labels = labels() }, true},
		{"another value", func(ev *v1alpha1.ClusterEvent) { ev.ClusterTemplate.Labels = labels("kube_tag", "v1.34.3") }, false},
		{"another key", func(ev *v1alpha1.ClusterEvent) { ev.ClusterTemplate.Labels = labels("auto_healing_enabled", "true") }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := New()
			a, b := fixtureEvent(t, "01-prod-a-create.yaml"), fixtureEvent(t, "01-prod-a-create.yaml")
			a.ClusterTemplate.Labels = labels()
			tt.other(b)
			ca, cb := c.Event(a), c.Event(b)
			shared := reflect.ValueOf(ca.ClusterTemplate.Labels).UnsafePointer() == reflect.ValueOf(cb.ClusterTemplate.Labels).UnsafePointer()
			if shared != tt.share {
				t.Errorf("template labels shared: %v, want %v", shared, tt.share)
			}
			if diff := cmp.Diff(b.ClusterTemplate.Labels, cb.ClusterTemplate.Labels); diff != "" {
				t.Errorf("the copy's labels (-want +got):\n%s", diff)
			}
		})
	}
	// A type of its own: the same entries as a Labels and as a map[string]string.
	c := New()
	ev := fixtureEvent(t, "01-prod-a-create.yaml")
	ev.ClusterTemplate.Labels = v1alpha1.Labels{"role": "worker"}
	ev.NodeGroups[1].NodeLabels = map[string]string{"role": "worker"}
	got := c.Event(ev)
	if got.NodeGroups[1].NodeLabels["role"] != "worker" || got.ClusterTemplate.Labels["role"] != "worker" {
		t.Errorf("maps of two types with equal entries: %v, %v", got.ClusterTemplate.Labels, got.NodeGroups[1].NodeLabels)
	}
}

// BenchmarkClustersMemory: the heap the cluster index holds per cluster, for 10,000
// clusters of one template carrying 25 labels, as decoded from their records and as the
// index keeps them (compacted), side by side.
func BenchmarkClustersMemory(b *testing.B) {
	base := fixtureEvent(b, "01-prod-a-create.yaml")
	base.ClusterTemplate.Labels = v1alpha1.Labels{}
	for i := range 25 {
		base.ClusterTemplate.Labels[fmt.Sprintf("label_%02d", i)] = fmt.Sprintf("value-%02d", i)
	}
	const clusters = 10000
	records := make([][]byte, clusters)
	for i := range records {
		ev := *base
		ev.Cluster.UUID = fmt.Sprintf("3e9b7c52-1d4a-4f8e-9b6c-%012d", i)
		ev.Cluster.Name = fmt.Sprintf("b%05d", i)
		ev.Cluster.StackID = fmt.Sprintf("b%05d-stack", i)
		ev.Cluster.ProjectID = fmt.Sprintf("p%03d", i/20)
		ev.Secrets = nil // as a cluster's record holds it
		var err error
		if records[i], err = json.Marshal(&ev); err != nil {
			b.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		keep func(c *Compactor, ev *v1alpha1.ClusterEvent) *v1alpha1.ClusterEvent
	}{
		{"decoded", func(_ *Compactor, ev *v1alpha1.ClusterEvent) *v1alpha1.ClusterEvent { return ev }},
		{"compacted", (*Compactor).Event},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var held uint64
			for b.Loop() {
				c := New()
				before := heapInUse()
				kept := make([]*v1alpha1.ClusterEvent, clusters)
				for i, data := range records {
					ev, err := v1alpha1.DecodeEvent(data)
					if err != nil {
						b.Fatal(err)
					}
					kept[i] = tc.keep(c, ev)
				}
				held += heapInUse() - before
				runtime.KeepAlive(kept)
			}
			b.ReportMetric(float64(held)/float64(b.N)/clusters, "B/cluster")
		})
	}
}

// heapInUse is the live heap after a collection.
func heapInUse() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkCompactorEvent: what a record costs the index once decoded (at start, and for
// each event answered).
func BenchmarkCompactorEvent(b *testing.B) {
	ev := fixtureEvent(b, "01-prod-a-create.yaml")
	c := New()
	b.ReportAllocs()
	for b.Loop() {
		c.Event(ev)
	}
}
