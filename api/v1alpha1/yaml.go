package v1alpha1

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"
)

// MaxDepth bounds how deeply a document may nest. A ClusterEvent nests about six levels;
// the YAML parser takes minutes on a few thousand, so deeper input is refused before it
// is parsed.
const MaxDepth = 64

// ToJSON converts one YAML (or JSON) document to JSON, strictly: a second document, a key
// that appears twice in a mapping, or nesting deeper than MaxDepth is an error — a
// duplicate "operation" must not silently win, nor a second document be dropped. No error
// quotes a value of the document, which may hold secrets.
func ToJSON(data []byte) ([]byte, error) {
	if isJSONObject(data) {
		if ok, err := checkJSON(data); err != nil {
			return nil, namedDuplicate(data, err)
		} else if ok {
			return data, nil
		}
	}
	if n := documents(data); n > 1 {
		return nil, &FieldError{Field: "(document 2)", Message: "a file holds one document; found " + fmt.Sprint(n)}
	}
	if d := depth(data); d > MaxDepth {
		return nil, &FieldError{Field: "(document)", Message: fmt.Sprintf("nested more than %d levels deep", MaxDepth)}
	}
	if moreAfterFlow(data) {
		// The YAML parser keeps a document's first flow node and drops what follows it.
		return nil, &FieldError{Field: "(document 2)", Message: "a file holds one document; found more after the flow mapping"}
	}
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, namedDuplicate(data, &FieldError{Field: "(document)", Message: "not valid YAML or JSON: " + Redact(err.Error())})
	}
	return j, nil
}

// namedDuplicate turns a refusal of a key set twice (checkJSON's, or the YAML library's,
// which names neither the key nor where it is) into an error naming the field; any other
// error is returned as it is.
func namedDuplicate(data []byte, err error) error {
	if !errors.Is(err, errKeyTwice) && !strings.Contains(err.Error(), "already set in map") {
		return err
	}
	if path := duplicateKey(data); path != "" {
		return &FieldError{Field: path, Message: "set twice in one mapping: a second value must not silently win"}
	}
	return err
}

// quotedRE matches what parsers quote from the input: anchors, keys, values.
var quotedRE = regexp.MustCompile(`'[^'\n]*'|"[^"\n]*"|` + "`[^`\n]*`")

// Redact removes every quoted fragment of a parser's message, keeping its shape
// ("unknown anchor '…' referenced"), so that no value of the input reaches an error.
func Redact(msg string) string {
	return quotedRE.ReplaceAllStringFunc(msg, func(q string) string { return q[:1] + "…" + q[len(q)-1:] })
}

// documents counts the YAML documents with content in data.
func documents(data []byte) int {
	n, content := 0, false
	for _, line := range bytes.Split(data, []byte("\n")) {
		l := strings.TrimRight(string(line), "\r")
		if l == "---" || strings.HasPrefix(l, "--- ") || l == "..." {
			if content {
				n++
			}
			content = false
			if strings.HasPrefix(l, "--- ") && strings.TrimSpace(strings.TrimPrefix(l, "--- ")) != "" && !strings.HasPrefix(strings.TrimSpace(strings.TrimPrefix(l, "--- ")), "#") {
				content = true // "--- value" starts a document with content
			}
			continue
		}
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") {
			content = true
		}
	}
	if content {
		n++
	}
	return n
}

// depth estimates how deeply a YAML document nests: block indentation levels plus "- "
// sequence markers, and inside a flow collection its brackets, counted from the level the
// collection stands at (a line that opens one is that level itself; the lines inside it
// add no indentation level). Quoted text is skipped.
func depth(data []byte) int {
	maxDepth, flow, flowBase := 0, 0, 0
	var indents []int
	for _, line := range strings.Split(string(data), "\n") {
		t := strings.TrimLeft(line, " ")
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		if flow == 0 {
			ind := len(line) - len(t)
			for len(indents) > 0 && indents[len(indents)-1] >= ind {
				indents = indents[:len(indents)-1]
			}
			indents = append(indents, ind)
			d := len(indents)
			for strings.HasPrefix(t, "- ") {
				d++
				t = strings.TrimLeft(t[2:], " ")
			}
			maxDepth = max(maxDepth, d)
			flowBase = d
			if strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
				flowBase = d - 1 // the collection is this line's node
			}
		}
		var quote byte
		for i := 0; i < len(t); i++ {
			c := t[i]
			switch {
			case quote == '"' && c == '\\':
				i++
			case quote != 0:
				if c == quote {
					quote = 0
				}
			case c == '"' || c == '\'':
				quote = c
			case c == '#' && (i == 0 || t[i-1] == ' '):
				i = len(t) // a comment
			case c == '[' || c == '{':
				flow++
				maxDepth = max(maxDepth, flowBase+flow)
			case c == ']' || c == '}':
				flow = max(flow-1, 0)
			}
		}
	}
	return maxDepth
}

// moreAfterFlow reports whether a document that is one flow collection ("{…}" or "[…]",
// JSON's syntax too) has anything but white space and comments after it closes.
func moreAfterFlow(data []byte) bool {
	t := bytes.TrimLeft(data, " \t\r\n")
	if len(t) == 0 || t[0] != '{' && t[0] != '[' {
		return false
	}
	level := 0
	var quote byte
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch {
		case quote == '"' && c == '\\':
			i++ // an escaped character, a quote among them
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '{' || c == '[':
			level++
		case c == '}' || c == ']':
			if level--; level == 0 {
				for _, line := range bytes.Split(t[i+1:], []byte("\n")) {
					if l := bytes.TrimSpace(line); len(l) > 0 && l[0] != '#' {
						return true
					}
				}
				return false
			}
		}
	}
	return false // unclosed: the parser names that
}
