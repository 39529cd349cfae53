package v1alpha1

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// errKeyTwice is checkJSON's refusal of a key set twice; ToJSON names the key (duplicateKey).
var errKeyTwice = &FieldError{Field: "(document)", Message: "a key appears twice in one mapping"}

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
//
// It is a token walk of encoding/json's decoder, so that JSON here is what encoding/json
// reads. A hand-written scanner stood here: an event decoded in 0.56× the time with it, but
// it saved 4 % of an event's CPU in BenchmarkThroughput, under the 10 % a port must save on
// a path a user waits on (docs/benchmarks.md).
func checkJSON(data []byte) (ok bool, err error) {
	return checkJSONMembers(data, nil)
}

// member is a top-level key of a document, decoded, and the bytes of its value.
type member struct {
	key   string
	value []byte
}

// jsonFrame is an object or array the walk is in.
type jsonFrame struct {
	object bool
	// keys are the object's keys so far; kept with the frame's slot and cleared, so that
	// sibling objects reuse one set (push).
	keys map[string]struct{}
	// inValue: in an object, a key was read and its value is next (or open).
	inValue bool
}

// checkJSONMembers is checkJSON, appending the document's top-level members to members
// when it is not nil: the key as encoding/json decodes it and the value's bytes, for
// decodeMembers.
func checkJSONMembers(data []byte, members *[]member) (ok bool, err error) {
	if !isJSONObject(data) {
		return false, nil // a scalar document is not an event
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // a number no float64 holds is still JSON
	var (
		stack  []jsonFrame
		key    string // the top-level member being read
		keyEnd int64  // where its key ends
	)
	for {
		tok, err := dec.Token()
		if err != nil {
			return false, nil // not JSON (or cut short): the YAML path decides
		}
		if k, isString := tok.(string); isString && len(stack) > 0 {
			top := &stack[len(stack)-1]
			if top.object && !top.inValue {
				// Token returns a key as a string, decoded: "a" and "\u0061" are one key,
				// and so are two invalid UTF-8 sequences it turns into U+FFFD.
				if _, dup := top.keys[k]; dup {
					return true, errKeyTwice // a duplicate must not silently win
				}
				top.keys[k] = struct{}{}
				top.inValue = true
				if len(stack) == 1 {
					key, keyEnd = k, dec.InputOffset()
				}
				continue
			}
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			if len(stack) >= MaxDepth {
				return true, &FieldError{Field: "(document)", Message: fmt.Sprintf("nested more than %d levels deep", MaxDepth)}
			}
			stack = push(stack, tok == json.Delim('{'))
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				return oneDocument(data[dec.InputOffset():])
			}
		}
		// A value ended: a scalar, or the container just closed.
		top := &stack[len(stack)-1]
		if !top.object {
			continue
		}
		top.inValue = false
		if len(stack) == 1 && members != nil {
			// Between the key and its value are white space and the colon only.
			value := bytes.TrimLeft(data[keyEnd:dec.InputOffset()], " \t\r\n:")
			*members = append(*members, member{key, value})
		}
	}
}

// push opens a container on stack, reusing the slot's set of keys.
func push(stack []jsonFrame, object bool) []jsonFrame {
	if len(stack) < cap(stack) {
		stack = stack[:len(stack)+1]
	} else {
		stack = append(stack, jsonFrame{})
	}
	f := &stack[len(stack)-1]
	f.object, f.inValue = object, false
	if object {
		if f.keys == nil {
			f.keys = map[string]struct{}{}
		} else {
			clear(f.keys)
		}
	}
	return stack
}

// oneDocument decides what follows the object, rest. One value only: a YAML comment after
// it is YAML's business; any other text is a second document (or garbage) that must not be
// dropped.
func oneDocument(rest []byte) (ok bool, err error) {
	rest = bytes.TrimLeft(rest, " \t\r\n")
	switch {
	case len(rest) == 0:
		return true, nil
	case rest[0] == '#':
		return false, nil
	}
	return true, &FieldError{Field: "(document 2)", Message: "a file holds one document; found more after the JSON object"}
}
