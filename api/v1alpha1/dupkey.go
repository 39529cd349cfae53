package v1alpha1

import (
	"strconv"
	"strings"
	"unicode"

	yaml "go.yaml.in/yaml/v3"
)

// duplicateKey names, as a field path, the first key that appears twice in one mapping of
// a YAML or JSON document (cluster.master_count, nodegroups[default-worker].name); "" when
// there is none or the document does not parse. Keys are field names, not values, so the
// path may quote them; a key that does not read as a name is shown as "(a key)".
func duplicateKey(data []byte) string {
	var root yaml.Node
	if yaml.Unmarshal(data, &root) != nil || len(root.Content) == 0 {
		return ""
	}
	path, _ := findDuplicate(root.Content[0], "", 0)
	return path
}

func findDuplicate(n *yaml.Node, at string, depth int) (string, bool) {
	if depth > MaxDepth {
		return "", false
	}
	switch n.Kind {
	case yaml.MappingNode:
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			key := n.Content[i].Value
			here := join(at, keyName(key))
			if seen[key] {
				return here, true
			}
			seen[key] = true
			if p, ok := findDuplicate(n.Content[i+1], here, depth+1); ok {
				return p, true
			}
		}
	case yaml.SequenceNode:
		for i, item := range n.Content {
			if p, ok := findDuplicate(item, at+"["+itemName(item, i)+"]", depth+1); ok {
				return p, true
			}
		}
	}
	return "", false
}

// itemName names a list item by its name field when it has one (node groups), else its
// index.
func itemName(item *yaml.Node, i int) string {
	if item.Kind == yaml.MappingNode {
		for j := 0; j+1 < len(item.Content); j += 2 {
			if item.Content[j].Value == "name" && item.Content[j+1].Kind == yaml.ScalarNode {
				if v := item.Content[j+1].Value; isName(v) {
					if _, err := strconv.Atoi(v); err != nil {
						return v
					}
				}
			}
		}
	}
	return strconv.Itoa(i)
}

func keyName(k string) string {
	if isName(k) {
		return k
	}
	return "(a key)"
}

func isName(s string) bool {
	return s != "" && len(s) <= 63 && !strings.ContainsFunc(s, func(r rune) bool {
		return unicode.IsControl(r) || unicode.IsSpace(r) || r == '"' || r == '\''
	})
}

func join(at, key string) string {
	if at == "" {
		return key
	}
	return at + "." + key
}
