package generator

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/magnum-gitops/magnum-gitops/internal/byteset"
)

// marshalValues is json.Marshal(values), byte for byte. The HelmRelease carries the chart
// values as raw JSON, so every render encodes them; encoding/json spends most of that on
// reflection and on sorting each map's keys as reflect.Values. Values are JSON-shaped
// (maps, lists, strings, booleans, ints and nulls, built here or copied from the site's
// overlay), and those are written directly below; anything else (a float from the overlay,
// a string that needs escaping) is handed to json.Marshal, whose output for a value inside
// a document is the same as on its own. TestMarshalValues and FuzzMarshalValues hold this
// equal to json.Marshal. Kept because the full render misses its 200 µs target with
// json.Marshal in its place (docs/benchmarks.md).
func marshalValues(values map[string]any) ([]byte, error) {
	// The values of a cluster are one to a few KB; the buffer becomes the HelmRelease's.
	return appendValueJSON(make([]byte, 0, 2048), values)
}

// appendValueJSON appends v as json.Marshal writes it.
func appendValueJSON(b []byte, v any) ([]byte, error) {
	switch t := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		return strconv.AppendBool(b, t), nil
	case int:
		return strconv.AppendInt(b, int64(t), 10), nil
	case string:
		return appendStringJSON(b, t)
	case []any:
		if t == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '[')
		for i, e := range t {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendValueJSON(b, e); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case map[string]any:
		if t == nil {
			return append(b, "null"...), nil
		}
		// encoding/json writes members in the byte order of their keys.
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendStringJSON(b, k); err != nil {
				return nil, err
			}
			b = append(b, ':')
			if b, err = appendValueJSON(b, t[k]); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	}
	return appendMarshal(b, v)
}

// appendStringJSON appends s as a JSON string. A string of jsonPlain bytes is written as it
// is; any other is left to json.Marshal.
func appendStringJSON(b []byte, s string) ([]byte, error) {
	if !jsonPlain.All(s) {
		return appendMarshal(b, s)
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), nil
}

// jsonPlain are the bytes encoding/json writes unescaped in a string: printable ASCII but
// the quote, the backslash, and <, > and & (escaped for HTML). DEL and everything from
// 0x80 on are left out too, so UTF-8 and its validation stay json.Marshal's.
var jsonPlain = func() *byteset.Set {
	var s byteset.Set
	for c := 0x20; c < 0x7f; c++ {
		s[c] = !strings.ContainsRune(`"\<>&`, rune(c))
	}
	return &s
}()

// appendMarshal appends json.Marshal(v).
func appendMarshal(b []byte, v any) ([]byte, error) {
	j, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, j...), nil
}
