package generator

import (
	"math/big"
	"strings"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
)

// labelSet answers label lookups the way magnum-capi-helm does: template labels overlaid by
// cluster labels (the cluster wins per key), every value filtered to a safe character set.
// Because of that filter, label values with newlines, quotes, "{{" or YAML markers reach the
// chart values inert.
type labelSet struct {
	merged map[string]string
}

func newLabelSet(template, cluster v1alpha1.Labels) labelSet {
	merged := make(map[string]string, len(template)+len(cluster))
	for k, v := range template {
		merged[k] = v
	}
	for k, v := range cluster {
		merged[k] = v
	}
	return labelSet{merged: merged}
}

// str is the driver's _label(key, default): the label (or default when absent) with unsafe
// characters deleted. When no label is set at all, the default is returned unfiltered,
// exactly as the driver does.
func (l labelSet) str(key, def string) string {
	if len(l.merged) == 0 {
		return def
	}
	v, ok := l.merged[key]
	if !ok {
		v = def
	}
	return notLabelChars.ReplaceAllString(v, "")
}

// boolean is the driver's _get_label_bool: oslo bool_from_string over the filtered label,
// falling back to def for anything that is not a recognised spelling (including "").
func (l labelSet) boolean(key string, def bool) bool {
	if b, ok := parseBool(l.str(key, "")); ok {
		return b
	}
	return def
}

// parseBool is oslo.utils strutils.bool_from_string without a default.
func parseBool(s string) (bool, bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "1", "t", "true", "on", "y", "yes":
		return true, true
	case "0", "f", "false", "off", "n", "no":
		return false, true
	}
	return false, false
}

// integer is the driver's _get_label_int: Python int() of the filtered label, def when the
// label is empty or does not parse. The bool reports whether the label itself was used.
func (l labelSet) integer(key string, def *int) (*int, bool) {
	v := l.str(key, "")
	if v == "" {
		return def, false
	}
	n, ok := parsePythonInt(v)
	if !ok {
		return def, false
	}
	return &n, true
}

// parsePythonInt accepts what Python's int(str) accepts for base 10: surrounding
// whitespace, a sign, and single "_" between digits. Values outside the int range are
// rejected (Python would accept them, but no count or size that large is meaningful).
func parsePythonInt(s string) (int, bool) {
	s = strings.TrimSpace(s)
	sign := ""
	if s != "" && (s[0] == '+' || s[0] == '-') {
		sign, s = s[:1], s[1:]
	}
	if s == "" || s[0] == '_' || s[len(s)-1] == '_' || strings.Contains(s, "__") {
		return 0, false
	}
	digits := strings.ReplaceAll(s, "_", "")
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, ok := new(big.Int).SetString(sign+digits, 10)
	if !ok || !n.IsInt64() || n.Int64() > int64(^uint32(0)>>1) || n.Int64() < -int64(^uint32(0)>>1) {
		return 0, false
	}
	return int(n.Int64()), true
}

// csv is the driver's _get_label_csv: split on ",", drop blank entries, delete characters
// outside [a-zA-Z0-9.-/:] from each. The default is used when the label is absent or empty.
func (l labelSet) csv(key, def string) []string {
	raw := l.merged[key]
	if raw == "" {
		raw = def
	}
	var out []string
	for _, part := range strings.Split(raw, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		out = append(out, notCSVChars.ReplaceAllString(part, ""))
	}
	return out
}
