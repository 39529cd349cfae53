package v1alpha1

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Labels are Magnum labels. Magnum stores them as strings; a number or boolean in the
// document is converted as Python's str() would ("2", "True").
type Labels map[string]string

// UnmarshalJSON implements json.Unmarshaler.
func (l *Labels) UnmarshalJSON(b []byte) error {
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		return fmt.Errorf("labels must be a map of strings: %w", err)
	}
	out := make(Labels, len(m))
	for k, v := range m {
		switch t := v.(type) {
		case string:
			out[k] = t
		case json.Number:
			out[k] = t.String()
		case bool:
			out[k] = strings.ToUpper(strconv.FormatBool(t)[:1]) + strconv.FormatBool(t)[1:]
		default:
			return fmt.Errorf("label %q must be a string, got %s", k, jsonKind(v))
		}
	}
	*l = out
	return nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "a map"
	case []any:
		return "a list"
	}
	return fmt.Sprintf("%T", v)
}
