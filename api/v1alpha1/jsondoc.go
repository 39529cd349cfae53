package v1alpha1

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// isJSONObject reports whether data looks like a JSON document: its first character that
// is not white space opens an object. (A YAML document cannot start with "{" unless it is a
// flow mapping, which is JSON's syntax too.)
func isJSONObject(data []byte) bool {
	t := bytes.TrimLeft(data, " \t\r\n")
	return len(t) > 0 && t[0] == '{'
}

// checkJSON validates a JSON document with ToJSON's rules — one value, no key twice in an
// object, nesting at most MaxDepth — without the YAML parser: the event API's bodies are
// JSON, and parsing them as YAML took most of the time an event spends before rendering.
// It returns false when data is not strictly JSON (YAML flow syntax, comments, trailing
// text), and the caller falls back to the YAML path, which decides the error.
func checkJSON(data []byte) (ok bool, err error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	type frame struct {
		object bool
		keys   map[string]struct{}
		key    bool // in an object: the next string token is a key
	}
	var stack []frame
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return len(stack) == 0, nil
		}
		if err != nil {
			return false, nil
		}
		var top *frame
		if len(stack) > 0 {
			top = &stack[len(stack)-1]
		}
		if k, isString := tok.(string); isString && top != nil && top.object && top.key {
			// Token returns a key as a string; a duplicate must not silently win.
			if _, dup := top.keys[k]; dup {
				return true, &FieldError{Field: "(document)", Message: "a key appears twice in one mapping"}
			}
			top.keys[k] = struct{}{}
			top.key = false
			continue
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			if len(stack) >= MaxDepth {
				return true, &FieldError{Field: "(document)", Message: fmt.Sprintf("nested more than %d levels deep", MaxDepth)}
			}
			if top != nil && top.object {
				top.key = true
			}
			stack = append(stack, frame{object: tok == json.Delim('{'), keys: map[string]struct{}{}, key: tok == json.Delim('{')})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				// One value only. A YAML comment after it is YAML's business; any other
				// text is a second document (or garbage) that must not be dropped.
				rest := bytes.TrimLeft(data[dec.InputOffset():], " \t\r\n")
				switch {
				case len(rest) == 0:
					return true, nil
				case rest[0] == '#':
					return false, nil
				}
				return true, &FieldError{Field: "(document 2)", Message: "a file holds one document; found more after the JSON object"}
			}
		default:
			if top == nil {
				return false, nil // a scalar document is not an event
			}
			if top.object {
				top.key = true
			}
		}
	}
}
