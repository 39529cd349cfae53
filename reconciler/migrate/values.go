package migrate

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
)

// plain is values as Helm reads them: through JSON, so that numbers and maps compare
// whatever Go types held them.
func plain(v map[string]any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// changedPaths lists the dotted paths where two values documents differ, sorted: a map
// key present on one side only, or a leaf or list that differs (lists are compared
// element by element when both sides have the same length).
func changedPaths(a, b any) []string {
	var out []string
	var walk func(a, b any, at string)
	walk = func(a, b any, at string) {
		switch x := a.(type) {
		case map[string]any:
			y, ok := b.(map[string]any)
			if !ok {
				break
			}
			keys := slices.Sorted(maps.Keys(x))
			for k := range y {
				if _, ok := x[k]; !ok {
					keys = append(keys, k)
				}
			}
			for _, k := range keys {
				p := k
				if at != "" {
					p = at + "." + k
				}
				walk(x[k], y[k], p)
			}
			return
		case []any:
			y, ok := b.([]any)
			if !ok || len(x) != len(y) {
				break
			}
			for i := range x {
				walk(x[i], y[i], fmt.Sprintf("%s[%d]", at, i))
			}
			return
		}
		if !reflect.DeepEqual(a, b) {
			out = append(out, at)
		}
	}
	walk(a, b, "")
	slices.Sort(out)
	return out
}
