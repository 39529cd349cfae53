package v1alpha1

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"
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
// It is a single pass over the bytes, RFC 8259's grammar as encoding/json reads it
// (TestCheckJSONMatchesTokens and FuzzCheckJSON hold it to a json.Decoder token walk):
// the token walk it replaces allocated for every token and took a third of decoding an
// event.
func checkJSON(data []byte) (ok bool, err error) {
	return checkJSONMembers(data, nil)
}

// checkJSONMembers is checkJSON, appending the document's top-level members to members
// when it is not nil.
func checkJSONMembers(data []byte, members *[]member) (ok bool, err error) {
	c := jsonChecker{data: data, members: members}
	c.space()
	if c.i == len(c.data) || c.data[c.i] != '{' {
		return false, nil // a scalar document is not an event
	}
	if !c.value(0) {
		return c.err != nil, c.err
	}
	// One value only. A YAML comment after it is YAML's business; any other text is a
	// second document (or garbage) that must not be dropped.
	c.space()
	switch {
	case c.i == len(c.data):
		return true, nil
	case c.data[c.i] == '#':
		return false, nil
	}
	return true, &FieldError{Field: "(document 2)", Message: "a file holds one document; found more after the JSON object"}
}

// jsonChecker walks a JSON document. A false return with err nil is a syntax error.
type jsonChecker struct {
	data []byte
	i    int
	err  error // a rule of ToJSON broken by valid JSON
	keys [][]byte
	// members, when not nil, collects the document's top-level members (decodeMembers).
	members *[]member
}

// member is a top-level key of a document, decoded, and the bytes of its value.
type member struct {
	key   string
	value []byte
}

func (c *jsonChecker) space() {
	for c.i < len(c.data) {
		switch c.data[c.i] {
		case ' ', '\t', '\n', '\r':
			c.i++
		default:
			return
		}
	}
}

// value checks one value at c.i; depth counts the containers around it.
func (c *jsonChecker) value(depth int) bool {
	if c.i == len(c.data) {
		return false
	}
	switch b := c.data[c.i]; {
	case b == '{' || b == '[':
		if depth >= MaxDepth {
			c.err = &FieldError{Field: "(document)", Message: fmt.Sprintf("nested more than %d levels deep", MaxDepth)}
			return false
		}
		if b == '{' {
			return c.object(depth + 1)
		}
		return c.array(depth + 1)
	case b == '"':
		_, ok := c.str()
		return ok
	case b == 't':
		return c.literal("true")
	case b == 'f':
		return c.literal("false")
	case b == 'n':
		return c.literal("null")
	case b == '-' || b >= '0' && b <= '9':
		return c.number()
	}
	return false
}

func (c *jsonChecker) object(depth int) bool {
	c.i++               // {
	mark := len(c.keys) // this object's keys are c.keys[mark:]
	defer func() { c.keys = c.keys[:mark] }()
	c.space()
	if c.i < len(c.data) && c.data[c.i] == '}' {
		c.i++
		return true
	}
	for {
		c.space()
		if c.i == len(c.data) || c.data[c.i] != '"' {
			return false
		}
		key, ok := c.str()
		if !ok {
			return false
		}
		for _, k := range c.keys[mark:] {
			if bytes.Equal(k, key) {
				// A duplicate must not silently win.
				c.err = errKeyTwice
				return false
			}
		}
		c.keys = append(c.keys, key)
		c.space()
		if c.i == len(c.data) || c.data[c.i] != ':' {
			return false
		}
		c.i++
		c.space()
		start := c.i
		if !c.value(depth) {
			return false
		}
		if depth == 1 && c.members != nil {
			*c.members = append(*c.members, member{string(key), c.data[start:c.i]})
		}
		if more, ok := c.after('}'); !more {
			return ok
		}
	}
}

func (c *jsonChecker) array(depth int) bool {
	c.i++ // [
	c.space()
	if c.i < len(c.data) && c.data[c.i] == ']' {
		c.i++
		return true
	}
	for {
		c.space()
		if !c.value(depth) {
			return false
		}
		if more, ok := c.after(']'); !more {
			return ok
		}
	}
}

// after reads what follows a member or an element: a comma (more follow) or the closing
// bracket. ok is false for anything else.
func (c *jsonChecker) after(closing byte) (more, ok bool) {
	c.space()
	if c.i == len(c.data) {
		return false, false
	}
	switch c.data[c.i] {
	case ',':
		c.i++
		return true, true
	case closing:
		c.i++
		return false, true
	}
	return false, false
}

// str checks a string at c.i and returns its content: the raw bytes, or, when it has
// escapes or invalid UTF-8, the text as encoding/json decodes it, so that "a" and "\u0061"
// are the same key.
func (c *jsonChecker) str() ([]byte, bool) {
	start := c.i
	c.i++ // "
	escaped := false
	for c.i < len(c.data) {
		switch b := c.data[c.i]; {
		case b == '"':
			c.i++
			raw := c.data[start:c.i]
			// encoding/json turns invalid UTF-8 into U+FFFD: two keys that differ only
			// there are the same key once decoded.
			if !escaped && utf8.Valid(raw) {
				return raw[1 : len(raw)-1], true
			}
			var s string
			if json.Unmarshal(raw, &s) != nil {
				return nil, false
			}
			return []byte(s), true
		case b == '\\':
			escaped = true
			if c.i+1 == len(c.data) {
				return nil, false
			}
			switch c.data[c.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				c.i += 2
			case 'u':
				if c.i+6 > len(c.data) {
					return nil, false
				}
				for _, h := range c.data[c.i+2 : c.i+6] {
					if (h < '0' || h > '9') && (h < 'a' || h > 'f') && (h < 'A' || h > 'F') {
						return nil, false
					}
				}
				c.i += 6
			default:
				return nil, false
			}
		case b < ' ':
			return nil, false
		default:
			c.i++
		}
	}
	return nil, false
}

func (c *jsonChecker) literal(word string) bool {
	if !bytes.HasPrefix(c.data[c.i:], []byte(word)) {
		return false
	}
	c.i += len(word)
	return true
}

// number checks -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (c *jsonChecker) number() bool {
	digits := func() int {
		n := 0
		for c.i < len(c.data) && c.data[c.i] >= '0' && c.data[c.i] <= '9' {
			c.i++
			n++
		}
		return n
	}
	if c.data[c.i] == '-' {
		c.i++
	}
	switch {
	case c.i < len(c.data) && c.data[c.i] == '0':
		c.i++
	case digits() == 0:
		return false
	}
	if c.i < len(c.data) && c.data[c.i] == '.' {
		c.i++
		if digits() == 0 {
			return false
		}
	}
	if c.i < len(c.data) && (c.data[c.i] == 'e' || c.data[c.i] == 'E') {
		c.i++
		if c.i < len(c.data) && (c.data[c.i] == '+' || c.data[c.i] == '-') {
			c.i++
		}
		if digits() == 0 {
			return false
		}
	}
	return true
}
