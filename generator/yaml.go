package generator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"

	"go.yaml.in/yaml/v3"
)

// MarshalObject serialises an object as YAML with sorted keys, without the empty
// creationTimestamp and status that typed objects carry, so files are stable and minimal.
//
// The object goes through its JSON, as Kubernetes serialises it (json tags, omitempty,
// custom marshalers), and go.yaml.in/yaml/v3 writes the result: two-space indentation,
// sequences flush with their key, keys in the library's natural order, no line folding.
// On every object the fixtures render this is byte for byte what the repository held when
// sigs.k8s.io/yaml (yaml v2) wrote it (TestMarshalObjectKeepsBytes), so a new build
// rewrites no file for its form; TestMarshalObjectCases lists where the two writers part.
func MarshalObject(obj any) ([]byte, error) {
	j, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	return MarshalObjectJSON(j)
}

// MarshalObjectJSON is MarshalObject for an object's JSON as encoding/json.Marshal gives
// it, for a caller that has it already (the service's digest gate hashes it).
func MarshalObjectJSON(j []byte) ([]byte, error) {
	m, err := decodeJSONObject(j)
	if err != nil {
		return nil, err
	}
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	if st, ok := m["status"].(map[string]any); ok && len(st) == 0 {
		delete(m, "status")
	}
	return encodeYAML(m)
}

// marshalYAML is MarshalObject without dropping anything, for YAML that is not a
// Kubernetes object (clouds.yaml).
func marshalYAML(obj any) ([]byte, error) {
	j, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	m, err := decodeJSONObject(j)
	if err != nil {
		return nil, err
	}
	return encodeYAML(m)
}

// decodeJSONObject decodes a JSON object into generic values, its numbers as json.Number.
func decodeJSONObject(j []byte) (map[string]any, error) {
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(j))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		return nil, err
	}
	return m, nil
}

// encodeYAML writes one document. A nil map (the JSON null) is the document null.
func encodeYAML(m map[string]any) ([]byte, error) {
	if m == nil {
		return []byte("null\n"), nil
	}
	v, err := yamlValue(m)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	enc.CompactSeqIndent()
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// yamlValue replaces, in place, what yaml v3 would write otherwise than yaml v2 did, or
// unreadably, under v.
//
// A json.Number becomes the Go number written as the JSON had it: an integer stays an
// integer whatever its size (as a float64, 1000000 would be written 1e+06), other numbers
// are float64, and a number no float64 holds (1e400) keeps its text.
//
// A string with both a line break and a tab is written double-quoted: yaml v3 would write
// it as a literal block, which YAML readers (yaml v3's own among them) refuse when its
// first line starts with a tab, and which yaml v2 never wrote. The encoder takes no style
// for a map's key, so such a key is refused (ErrInvalidInput): no Kubernetes name holds
// one.
func yamlValue(v any) (any, error) {
	var err error
	switch x := v.(type) {
	case json.Number:
		return yamlNumber(x), nil
	case string:
		if breakAndTab(x) {
			return &yaml.Node{Kind: yaml.ScalarNode, Style: yaml.DoubleQuotedStyle, Value: x}, nil
		}
	case map[string]any:
		for k, e := range x {
			if breakAndTab(k) {
				return nil, fmt.Errorf("%w: YAML key %q holds a line break and a tab", v1alpha1.ErrInvalidInput, k)
			}
			if x[k], err = yamlValue(e); err != nil {
				return nil, err
			}
		}
	case []any:
		for i, e := range x {
			if x[i], err = yamlValue(e); err != nil {
				return nil, err
			}
		}
	}
	return v, nil
}

func breakAndTab(s string) bool {
	return strings.ContainsRune(s, '\n') && strings.ContainsRune(s, '\t')
}

func yamlNumber(n json.Number) any {
	s := string(n)
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return i
	}
	if u, err := strconv.ParseUint(s, 10, 64); err == nil {
		return u
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return f
	}
	return s
}
