package status

import (
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// intAt returns the first integer found at one of the paths.
func intAt(o *unstructured.Unstructured, paths ...[]string) (int64, bool) {
	if o == nil {
		return 0, false
	}
	for _, p := range paths {
		v, found, _ := unstructured.NestedFieldNoCopy(o.Object, p...)
		if !found || v == nil {
			continue
		}
		switch n := v.(type) {
		case int64:
			return n, true
		case int:
			return int64(n), true
		case float64:
			return int64(n), true
		case string:
			if i, err := strconv.ParseInt(n, 10, 64); err == nil {
				return i, true
			}
		}
	}
	return 0, false
}

func stringAt(o *unstructured.Unstructured, path ...string) string {
	if o == nil {
		return ""
	}
	v, _, _ := unstructured.NestedFieldNoCopy(o.Object, path...)
	return str(v)
}

// fieldPath spells a field path in the argument list of intAt.
func fieldPath(path ...string) []string { return path }

// splitAPIVersion splits an object's apiVersion without allocating.
func splitAPIVersion(o *unstructured.Unstructured) (group, version string) {
	av, _ := o.Object["apiVersion"].(string)
	if i := strings.LastIndexByte(av, '/'); i >= 0 {
		return av[:i], av[i+1:]
	}
	return "", av
}

func kindOf(o *unstructured.Unstructured) string {
	k, _ := o.Object["kind"].(string)
	return k
}

// labelsOf reads an object's labels without copying them.
func labelsOf(o *unstructured.Unstructured) map[string]any {
	raw, _, _ := unstructured.NestedFieldNoCopy(o.Object, "metadata", "labels")
	m, _ := raw.(map[string]any)
	return m
}

func label(o *unstructured.Unstructured, key string) string {
	s, _ := labelsOf(o)[key].(string)
	return s
}
