package status

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// LoadObjects reads Kubernetes objects from a multi-document YAML or JSON stream; a
// document that is a List (kind: List, items: [...]) contributes its items.
func LoadObjects(r io.Reader) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(r, 4096)
	var out []*unstructured.Unstructured
	for n := 1; ; n++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		objs, err := decodeDoc(raw)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		out = append(out, objs...)
	}
}

// decodeDoc reads one document: an object, a List, or an array of objects.
func decodeDoc(raw json.RawMessage) ([]*unstructured.Unstructured, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] == '[' {
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return nil, err
		}
		var out []*unstructured.Unstructured
		for i, it := range items {
			objs, err := decodeDoc(it)
			if err != nil {
				return nil, fmt.Errorf("item %d: %w", i, err)
			}
			out = append(out, objs...)
		}
		return out, nil
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(raw); err != nil {
		return nil, err
	}
	if !u.IsList() {
		return []*unstructured.Unstructured{u}, nil
	}
	l, err := u.ToList()
	if err != nil {
		return nil, err
	}
	out := make([]*unstructured.Unstructured, 0, len(l.Items))
	for i := range l.Items {
		out = append(out, &l.Items[i])
	}
	return out, nil
}
