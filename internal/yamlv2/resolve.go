package yamlv2

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// ResolvesToString reports whether yaml.v2's resolve("", s) yields !!str, i.e. whether the
// string may be written unquoted.
func ResolvesToString(s []byte) bool {
	if len(s) == 0 {
		return false // "" resolves to null
	}
	hint := resolveTable[s[0]]
	if hint == 0 {
		return true
	}
	if resolveMapHas(s) {
		return false
	}
	switch hint {
	case 'M':
		return true
	case '.':
		_, err := strconv.ParseFloat(string(s), 64)
		return err != nil
	}
	// 'D', 'S': timestamp, int, uint, float, binary.
	if timestampShaped(s) {
		if _, ok := parseTimestamp(string(s)); ok {
			return false
		}
	}
	number, dot := mayBeNumber(s)
	if !number {
		return true
	}
	plain := strings.ReplaceAll(string(s), "_", "")
	if !dot && mayBeInteger(plain) {
		if _, err := strconv.ParseInt(plain, 0, 64); err == nil {
			return false
		}
		if _, err := strconv.ParseUint(plain, 0, 64); err == nil {
			return false
		}
	}
	if IsYAMLStyleFloat(plain) {
		if _, err := strconv.ParseFloat(plain, 64); err == nil {
			return false
		}
	}
	if strings.HasPrefix(plain, "0b") {
		if _, err := strconv.ParseInt(plain[2:], 2, 64); err == nil {
			return false
		}
		if _, err := strconv.ParseUint(plain[2:], 2, 64); err == nil {
			return false
		}
	} else if strings.HasPrefix(plain, "-0b") {
		if _, err := strconv.ParseInt("-"+plain[3:], 2, 64); err == nil {
			return false
		}
	}
	return true
}

// resolveTable is resolve.go's table of first characters.
var resolveTable = func() (t [256]byte) {
	t['+'], t['-'] = 'S', 'S'
	for c := '0'; c <= '9'; c++ {
		t[c] = 'D'
	}
	for _, c := range "yYnNtTfFoO~" {
		t[c] = 'M'
	}
	t['.'] = '.'
	return t
}()

// timestampShaped is parseTimestamp's quick check: four digits and a '-'.
func timestampShaped(s []byte) bool {
	if len(s) < 5 || s[4] != '-' {
		return false
	}
	for _, c := range s[:4] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// mayBeInteger is a necessary condition for strconv.ParseInt(s, 0, 64) or ParseUint to
// accept s (which has no underscores): a sign, then 0x/0X and hex digits, 0o/0O and octal
// digits, 0b/0B and binary digits, or decimal digits.
func mayBeInteger(s string) bool {
	if s != "" && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	digits := "0123456789"
	if len(s) >= 2 && s[0] == '0' {
		switch s[1] {
		case 'x', 'X':
			digits, s = "0123456789abcdefABCDEF", s[2:]
		case 'o', 'O':
			digits, s = "01234567", s[2:]
		case 'b', 'B':
			digits, s = "01", s[2:]
		}
	}
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(digits, s[i]) < 0 {
			return false
		}
	}
	return true
}

// mayBeNumber is a necessary condition for any of resolve's number parsers to accept s
// (with underscores removed): only digits, hex letters, base prefixes and dots, and a sign
// only at the start or after e, E (exponent) or b, B (after the 0b prefix). It saves the
// parsers' error allocations on UUIDs, versions and addresses. dot reports a '.', which
// only the float syntax allows.
func mayBeNumber(s []byte) (ok, dot bool) {
	var prev byte
	for _, c := range s {
		switch {
		case c == '_':
			continue
		case c >= '0' && c <= '9', c >= 'a' && c <= 'f', c >= 'A' && c <= 'F',
			c == 'x', c == 'X', c == 'o', c == 'O':
		case c == '.':
			dot = true
		case c == '+' || c == '-':
			if prev != 0 && prev != 'e' && prev != 'E' && prev != 'b' && prev != 'B' {
				return false, false
			}
		default:
			return false, false
		}
		prev = c
	}
	return true, dot
}

// resolveMapHas reports whether s is a key of resolve.go's resolveMap.
func resolveMapHas(s []byte) bool {
	switch string(s) {
	case "y", "Y", "yes", "Yes", "YES",
		"true", "True", "TRUE",
		"on", "On", "ON",
		"n", "N", "no", "No", "NO",
		"false", "False", "FALSE",
		"off", "Off", "OFF",
		"", "~", "null", "Null", "NULL",
		".nan", ".NaN", ".NAN",
		".inf", ".Inf", ".INF",
		"+.inf", "+.Inf", "+.INF",
		"-.inf", "-.Inf", "-.INF",
		"<<":
		return true
	}
	return false
}

// IsYAMLStyleFloat matches resolve.go's yamlStyleFloat,
// ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$, without a regexp.
func IsYAMLStyleFloat(s string) bool {
	i := 0
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		i++
	}
	digits := func() int {
		j := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i - j
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	} else {
		if digits() == 0 {
			return false
		}
		if i < len(s) && s[i] == '.' {
			i++
			digits()
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '-' || s[i] == '+') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}

var allowedTimestampFormats = []string{
	"2006-1-2T15:4:5.999999999Z07:00",
	"2006-1-2t15:4:5.999999999Z07:00",
	"2006-1-2 15:4:5.999999999",
	"2006-1-2",
}

// parseTimestamp is resolve.go's parseTimestamp.
func parseTimestamp(s string) (time.Time, bool) {
	i := 0
	for ; i < len(s); i++ {
		if c := s[i]; c < '0' || c > '9' {
			break
		}
	}
	if i != 4 || i == len(s) || s[i] != '-' {
		return time.Time{}, false
	}
	for _, format := range allowedTimestampFormats {
		if t, err := time.Parse(format, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

var base60float = regexp.MustCompile(`^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$`)

// IsBase60Float is encode.go's isBase60Float.
func IsBase60Float(s []byte) bool {
	if len(s) == 0 {
		return false
	}
	c := s[0]
	if !(c == '+' || c == '-' || c >= '0' && c <= '9') || bytes.IndexByte(s, ':') < 0 {
		return false
	}
	return base60float.Match(s)
}
