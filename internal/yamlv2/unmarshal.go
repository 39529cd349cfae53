package yamlv2

import (
	"encoding/json"
	"reflect"

	"sigs.k8s.io/yaml"
)

// Unmarshal is sigs.k8s.io/yaml.Unmarshal(data, v) for v pointing to a zero value, with
// ToJSON's fast reader first. The library also converts a YAML number or bool into a Go
// string field, from its text; the JSON decoder refuses those instead, so any decoding
// error is handed to the library too, and it decides. The fast attempt decodes into a
// fresh value, so nothing of it is left in v when the library takes over.
func Unmarshal(data []byte, v any) error {
	if j, ok := ToJSON(data); ok {
		fresh := reflect.New(reflect.TypeOf(v).Elem())
		if json.Unmarshal(j, fresh.Interface()) == nil {
			reflect.ValueOf(v).Elem().Set(fresh.Elem())
			return nil
		}
	}
	return yaml.Unmarshal(data, v)
}
