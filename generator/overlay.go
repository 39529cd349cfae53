package generator

// mergeOverlay deep-merges src over dst and returns dst: maps merge key by key; lists,
// scalars and null replace. A null stays in the values, where Helm reads it as "delete
// this key and the chart's default for it" (e.g. registryMirrors: null).
func mergeOverlay(dst, src map[string]any) map[string]any {
	if dst == nil {
		dst = map[string]any{}
	}
	for k, sv := range src {
		if sm, ok := sv.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				dst[k] = mergeOverlay(dm, sm)
				continue
			}
		}
		dst[k] = deepCopy(sv)
	}
	return dst
}

// deepCopy copies a JSON-shaped value so values never share structure with the
// configuration or with each other.
func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		l := make([]any, len(t))
		for i, e := range t {
			l[i] = deepCopy(e)
		}
		return l
	}
	return v
}
