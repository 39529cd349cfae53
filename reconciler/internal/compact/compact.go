// Package compact keeps the events of a fleet in little memory: the copies the
// reconciler's cluster index holds share what the fleet's events repeat.
package compact

import (
	"hash/maphash"
	"reflect"
	"slices"
	"sync"
	"unique"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
)

// Compactor makes the copies of events the cluster index keeps. A fleet's events repeat
// one another: the same template labels, image, flavor and network names, node-group
// labels. As decoded, each of 10,000 clusters holds its own copies, and the index is the
// largest part of serve's heap once it runs. A compacted copy shares them: its strings are
// interned (package unique, which lets go of a string no record holds) and its string
// maps are shared with every other record holding an equal map (BenchmarkClustersMemory:
// 0.4× the bytes of decoded events whose template carries 25 labels).
//
// Records are never written to (every change builds a new event), which is what lets them
// share maps. The copy is deep: the event it is made from, which its sender may still
// read, is not touched.
type Compactor struct {
	mu   sync.Mutex
	seed maphash.Seed
	// maps holds a canonical copy per content, by hash; cleared when it reaches maxMaps,
	// so that maps seen once (a cluster's own labels) do not pile up. A map copied after
	// that is shared again from its next record on.
	maps map[uint64]reflect.Value
}

// maxMaps bounds the canonical maps a Compactor keeps: a fleet's distinct label sets
// (templates, node-group roles) number far fewer.
const maxMaps = 4096

// New returns a Compactor that shares nothing yet.
func New() *Compactor {
	return &Compactor{seed: maphash.MakeSeed(), maps: map[uint64]reflect.Value{}}
}

// Event returns a deep copy of ev without Secret material, compacted.
func (c *Compactor) Event(ev *v1alpha1.ClusterEvent) *v1alpha1.ClusterEvent {
	out := *ev
	out.Secrets = nil
	c.mu.Lock()
	defer c.mu.Unlock()
	c.value(reflect.ValueOf(&out).Elem())
	return &out
}

// value replaces, in v (settable, already a shallow copy), every string by its interned
// value, every string map by its shared copy, and every slice and pointer by a copy of
// its own, walked the same way.
func (c *Compactor) value(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(unique.Make(v.String()).Value())
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Field(i); f.CanSet() {
				c.value(f)
			}
		}
	case reflect.Pointer:
		if v.IsNil() {
			return
		}
		p := reflect.New(v.Type().Elem())
		p.Elem().Set(v.Elem())
		c.value(p.Elem())
		v.Set(p)
	case reflect.Slice:
		if v.IsNil() {
			return
		}
		s := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		reflect.Copy(s, v)
		for i := range s.Len() {
			c.value(s.Index(i))
		}
		v.Set(s)
	case reflect.Map:
		switch {
		case v.IsNil():
		case v.Type().Key().Kind() == reflect.String && v.Type().Elem().Kind() == reflect.String:
			v.Set(c.stringMap(v))
		default:
			m := reflect.MakeMapWithSize(v.Type(), v.Len())
			iter := v.MapRange()
			for iter.Next() {
				k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
				k.Set(iter.Key())
				e.Set(iter.Value())
				c.value(k)
				c.value(e)
				m.SetMapIndex(k, e)
			}
			v.Set(m)
		}
	}
}

// stringMap returns the canonical copy of a string map: an earlier equal one of the same
// type, or a new copy with interned keys and values.
func (c *Compactor) stringMap(m reflect.Value) reflect.Value {
	keys := make([]string, 0, m.Len())
	for _, k := range m.MapKeys() {
		keys = append(keys, k.String())
	}
	slices.Sort(keys)
	var h maphash.Hash
	h.SetSeed(c.seed)
	h.WriteString(m.Type().String())
	for _, k := range keys {
		h.WriteByte(0)
		h.WriteString(k)
		h.WriteByte(0)
		h.WriteString(m.MapIndex(reflect.ValueOf(k).Convert(m.Type().Key())).String())
	}
	sum := h.Sum64()
	if have, ok := c.maps[sum]; ok && have.Type() == m.Type() && sameStrings(have, m) {
		return have
	}
	out := reflect.MakeMapWithSize(m.Type(), m.Len())
	iter := m.MapRange()
	for iter.Next() {
		k := reflect.ValueOf(unique.Make(iter.Key().String()).Value()).Convert(m.Type().Key())
		out.SetMapIndex(k, reflect.ValueOf(unique.Make(iter.Value().String()).Value()).Convert(m.Type().Elem()))
	}
	if len(c.maps) >= maxMaps {
		clear(c.maps)
	}
	c.maps[sum] = out
	return out
}

// sameStrings reports whether two string maps of one type hold the same entries.
func sameStrings(a, b reflect.Value) bool {
	if a.Len() != b.Len() {
		return false
	}
	iter := a.MapRange()
	for iter.Next() {
		v := b.MapIndex(iter.Key())
		if !v.IsValid() || v.String() != iter.Value().String() {
			return false
		}
	}
	return true
}
