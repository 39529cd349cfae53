package yamlv2

import (
	"bytes"
	"strconv"
	"unicode/utf8"
)

// maxNesting bounds the reader's recursion; deeper documents go to the library.
const maxNesting = 64

// maxKeyLength is the YAML reader's limit for a simple key (1024 characters).
const maxKeyLength = 1024

// ToJSON converts one YAML document to JSON with the values that
// sigs.k8s.io/yaml.YAMLToJSONStrict gives (mapping keys stay in document order). It reads
// block mappings and sequences (indentless sequences included), plain scalars on one line,
// single- and double-quoted scalars on one line, literal block scalars (|, |-, |+), the
// empty flow collections {} and [], and full-line comments. ok is false for anything else —
// flow collections, folded or multi-line scalars, anchors, aliases, tags, directives,
// several documents, tabs or CR line breaks, duplicate keys, non-string keys, floats, a
// top level that is not a mapping or a sequence, a last line without a line break — and
// for input the library would refuse; the caller then asks the library.
func ToJSON(data []byte) (out []byte, ok bool) {
	if len(data) == 0 || data[len(data)-1] != '\n' || !printable(data) {
		return nil, false
	}
	r := &reader{data: data, out: make([]byte, 0, len(data)+len(data)/4)}
	r.split()
	r.skip()
	if r.i == len(r.lines) {
		return nil, false // empty document: null, rare enough for the library
	}
	first := r.lines[r.i]
	if first.indent != 0 || isDocumentMarker(first.text) {
		return nil, false
	}
	if !r.block(0, 0) {
		return nil, false
	}
	r.skip()
	if r.i != len(r.lines) {
		return nil, false
	}
	return r.out, true
}

// line is one line of the document: its indentation in spaces and the rest.
type line struct {
	indent int
	text   []byte
	// raw is the whole line, for block scalars, whose content keeps its own indentation.
	raw []byte
}

type reader struct {
	data  []byte
	lines []line
	i     int // the next line to read
	out   []byte
}

// split cuts the document into lines (it ends with a line break: ToJSON checked).
func (r *reader) split() {
	n := bytes.Count(r.data, []byte{'\n'})
	r.lines = make([]line, 0, n)
	rest := r.data
	for len(rest) > 0 {
		end := bytes.IndexByte(rest, '\n')
		raw := rest[:end]
		rest = rest[end+1:]
		indent := 0
		for indent < len(raw) && raw[indent] == ' ' {
			indent++
		}
		r.lines = append(r.lines, line{indent: indent, text: raw[indent:], raw: raw})
	}
}

// skip moves past blank lines and full-line comments.
func (r *reader) skip() {
	for r.i < len(r.lines) {
		t := r.lines[r.i].text
		if len(t) != 0 && t[0] != '#' {
			return
		}
		r.i++
	}
}

// next is the indentation of the next line with content, or -1 at the end.
func (r *reader) next() int {
	r.skip()
	if r.i == len(r.lines) {
		return -1
	}
	return r.lines[r.i].indent
}

// block reads the node whose first line is the current one, at the given indentation.
func (r *reader) block(indent, depth int) bool {
	if depth > maxNesting {
		return false
	}
	l := r.lines[r.i]
	if l.indent != indent || bytes.ContainsRune(l.text, '\t') {
		return false
	}
	if isSequenceEntry(l.text) {
		return r.sequence(indent, depth)
	}
	return r.mapping(indent, depth)
}

// mapping reads a block mapping whose keys sit at indent.
func (r *reader) mapping(indent, depth int) bool {
	r.out = append(r.out, '{')
	var keys [][]byte
	for n := 0; ; n++ {
		at := r.next()
		if at < indent {
			break
		}
		l := r.lines[r.i]
		if at > indent || isSequenceEntry(l.text) || bytes.ContainsRune(l.text, '\t') {
			return false
		}
		if indent == 0 && isDocumentMarker(l.text) {
			return false
		}
		key, rest, ok := splitKey(l.text)
		if !ok {
			return false
		}
		for _, k := range keys {
			if bytes.Equal(k, key) {
				return false // Strict refuses duplicates: let the library say so
			}
		}
		keys = append(keys, key)
		if n > 0 {
			r.out = append(r.out, ',')
		}
		r.out = appendString(r.out, key)
		r.out = append(r.out, ':')
		r.i++
		if !r.value(rest, indent, depth, true) {
			return false
		}
	}
	r.out = append(r.out, '}')
	return true
}

// sequence reads a block sequence whose dashes sit at indent.
func (r *reader) sequence(indent, depth int) bool {
	r.out = append(r.out, '[')
	for n := 0; ; n++ {
		at := r.next()
		if at < indent {
			break
		}
		l := r.lines[r.i]
		if at > indent || bytes.ContainsRune(l.text, '\t') {
			return false
		}
		if !isSequenceEntry(l.text) {
			break // an indentless sequence ends at its mapping's next key
		}
		if n > 0 {
			r.out = append(r.out, ',')
		}
		rest := l.text[1:]
		spaces := 0
		for spaces < len(rest) && rest[spaces] == ' ' {
			spaces++
		}
		rest = rest[spaces:]
		if len(rest) == 0 || rest[0] == '#' {
			if len(rest) != 0 {
				return false
			}
			r.i++
			if !r.nested(indent, depth, false) {
				return false
			}
			continue
		}
		// "- key: value" opens a mapping, and "- - x" a sequence, whose entries sit at the
		// column after the dash: read this line again as that node's first line.
		col := indent + 1 + spaces
		if isSequenceEntry(rest) {
			r.lines[r.i] = line{indent: col, text: rest, raw: l.raw}
			if !r.sequence(col, depth+1) {
				return false
			}
			continue
		}
		if _, _, isKey := splitKey(rest); isKey {
			r.lines[r.i] = line{indent: col, text: rest, raw: l.raw}
			if !r.mapping(col, depth+1) {
				return false
			}
			continue
		}
		r.i++
		if !r.value(rest, indent, depth, false) {
			return false
		}
	}
	r.out = append(r.out, ']')
	return true
}

// value reads what follows a key's colon or an entry's dash on the same line (rest), and
// the lines under it. indent is the column of the key or the dash.
func (r *reader) value(rest []byte, indent, depth int, inMapping bool) bool {
	rest = trimSpaces(rest)
	if len(rest) == 0 {
		return r.nested(indent, depth, inMapping)
	}
	switch rest[0] {
	case '"', '\'':
		s, after, ok := quoted(rest)
		if !ok || len(trimSpaces(after)) != 0 {
			return false
		}
		r.out = appendString(r.out, s)
	case '|':
		return r.literal(rest, indent)
	case '{', '[':
		switch string(rest) {
		case "{}":
			r.out = append(r.out, "{}"...)
		case "[]":
			r.out = append(r.out, "[]"...)
		default:
			return false
		}
	default:
		if !r.plain(rest) {
			return false
		}
	}
	// A scalar's node ends on its line; a deeper line would continue it or be an error.
	return r.next() <= indent
}

// nested reads the node under a key or dash that had nothing after it: a block at a
// deeper indentation, an indentless sequence at the key's own column, or null.
func (r *reader) nested(indent, depth int, inMapping bool) bool {
	at := r.next()
	switch {
	case at > indent:
		return r.block(at, depth+1)
	case at == indent && inMapping && isSequenceEntry(r.lines[r.i].text):
		return r.sequence(indent, depth+1)
	}
	r.out = append(r.out, "null"...)
	return true
}

// plain writes a plain scalar as yaml.v2 resolves it: a string, null, a bool or an int.
// Floats and the other non-string forms (0x1F, 1_000, .inf, timestamps as tags…) go to
// the library.
func (r *reader) plain(s []byte) bool {
	if !plainStart(s) || bytes.Contains(s, []byte(" #")) || bytes.Contains(s, []byte(": ")) || s[len(s)-1] == ':' {
		return false
	}
	if ResolvesToString(s) {
		r.out = appendString(r.out, s)
		return true
	}
	switch string(s) {
	case "~", "null", "Null", "NULL":
		r.out = append(r.out, "null"...)
	case "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON":
		r.out = append(r.out, "true"...)
	case "n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF":
		r.out = append(r.out, "false"...)
	default:
		if !canonicalInt(s) {
			return false
		}
		r.out = append(r.out, s...)
	}
	return true
}

// literal reads a literal block scalar (| with clip, |- strip or |+ keep chomping) whose
// parent node sits at indent; its lines follow the current one.
func (r *reader) literal(header []byte, indent int) bool {
	var chomp byte
	switch string(header) {
	case "|":
	case "|-", "|+":
		chomp = header[1]
	default:
		return false // indentation indicators, comments after the header
	}
	// The content's indentation is the first non-blank line's; blank lines before it may
	// not be longer.
	start, contentIndent, longestBlank := r.i, -1, 0
	for j := start; j < len(r.lines); j++ {
		l := r.lines[j]
		if len(l.text) == 0 {
			longestBlank = max(longestBlank, l.indent)
			continue
		}
		if l.text[0] == '\t' {
			return false // the library refuses a tab where it looks for the indentation
		}
		contentIndent = l.indent
		break
	}
	if contentIndent <= indent || longestBlank > contentIndent {
		return false // empty, or a shape the library decides
	}
	var s []byte
	breaks := 0 // line breaks owed since the last content line
	j := start
	for ; j < len(r.lines); j++ {
		l := r.lines[j]
		if len(l.text) == 0 {
			if l.indent > contentIndent {
				return false // spaces beyond the indentation are content: rare, library's
			}
			breaks++
			continue
		}
		if l.indent < contentIndent {
			break
		}
		for ; breaks > 0; breaks-- {
			s = append(s, '\n')
		}
		s = append(s, l.raw[contentIndent:]...)
		breaks = 1
	}
	r.i = j
	switch chomp {
	case 0:
		s = append(s, '\n')
	case '+':
		for ; breaks > 0; breaks-- {
			s = append(s, '\n')
		}
	}
	r.out = appendString(r.out, s)
	return true
}

// splitKey splits "key: value" or "key:" into the key (unquoted) and the rest. ok is
// false when the line is not a simple string key the reader handles.
func splitKey(t []byte) (key, rest []byte, ok bool) {
	if t[0] == '"' || t[0] == '\'' {
		k, after, ok := quoted(t)
		if !ok || len(after) == 0 || after[0] != ':' || len(after) > 1 && after[1] != ' ' {
			return nil, nil, false
		}
		return k, after[1:], len(t)-len(after) <= maxKeyLength
	}
	end := bytes.Index(t, []byte(": "))
	if end < 0 {
		if t[len(t)-1] != ':' {
			return nil, nil, false
		}
		end = len(t) - 1
	}
	key = t[:end]
	if string(key) == "<<" {
		return nil, nil, false // the decoder merges under this key whatever it resolves to
	}
	if len(key) == 0 || len(key) > maxKeyLength || key[len(key)-1] == ' ' || !plainStart(key) ||
		bytes.Contains(key, []byte(" #")) || !ResolvesToString(key) {
		return nil, nil, false
	}
	return key, t[end+1:], true
}

// plainStart reports whether s may start a plain scalar here. The indicators that may
// start one when followed by a non-space (-, ?, :) are refused too, but for a '-' before
// something else than a space: negative numbers and names like "-x".
func plainStart(s []byte) bool {
	switch s[0] {
	case '[', ']', '{', '}', ',', '#', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`', '?', ':':
		return false
	case '-':
		return len(s) > 1 && s[1] != ' '
	}
	return true
}

// quoted reads a single- or double-quoted scalar that closes on its line. It returns the
// value and what follows the closing quote.
func quoted(t []byte) (value, after []byte, ok bool) {
	q := t[0]
	var v []byte
	for i := 1; i < len(t); i++ {
		c := t[i]
		switch {
		case c == q && q == '\'':
			if i+1 < len(t) && t[i+1] == '\'' {
				v = append(v, '\'')
				i++
				continue
			}
			return nonNil(v), t[i+1:], true
		case c == q:
			return nonNil(v), t[i+1:], true
		case c == '\\' && q == '"':
			if i+1 == len(t) {
				return nil, nil, false // an escaped line break: multi-line
			}
			n, w := unescape(t[i+1:])
			if w == 0 {
				return nil, nil, false
			}
			v = utf8.AppendRune(v, n)
			i += w
		default:
			v = append(v, c)
		}
	}
	return nil, nil, false // closes on a later line
}

// nonNil keeps an empty quoted value apart from a failure.
func nonNil(v []byte) []byte {
	if v == nil {
		return []byte{}
	}
	return v
}

// unescape decodes the escape after a backslash in a double-quoted scalar: the rune and
// how many bytes it took, or 0 for an escape the YAML reader refuses or that is a
// surrogate or outside Unicode.
func unescape(t []byte) (rune, int) {
	switch t[0] {
	case '0':
		return 0, 1
	case 'a':
		return '\a', 1
	case 'b':
		return '\b', 1
	case 't', '\t':
		return '\t', 1
	case 'n':
		return '\n', 1
	case 'v':
		return '\v', 1
	case 'f':
		return '\f', 1
	case 'r':
		return '\r', 1
	case 'e':
		return 0x1b, 1
	case ' ', '"', '\'', '\\':
		return rune(t[0]), 1
	case 'N':
		return 0x85, 1
	case '_':
		return 0xa0, 1
	case 'L':
		return 0x2028, 1
	case 'P':
		return 0x2029, 1
	case 'x':
		return hexRune(t, 2)
	case 'u':
		return hexRune(t, 4)
	case 'U':
		return hexRune(t, 8)
	}
	return 0, 0
}

// hexRune reads the n hex digits after \x, \u or \U.
func hexRune(t []byte, n int) (rune, int) {
	if len(t) < 1+n {
		return 0, 0
	}
	v, err := strconv.ParseUint(string(t[1:1+n]), 16, 32)
	if err != nil || v > utf8.MaxRune || v >= 0xd800 && v <= 0xdfff {
		return 0, 0
	}
	return rune(v), 1 + n
}

// canonicalInt reports whether s is a decimal int64 written as YAMLToJSON writes it again
// (no sign but '-', no leading zero, not "-0"), so that it can be copied as it is.
func canonicalInt(s []byte) bool {
	d := s
	if d[0] == '-' {
		d = d[1:]
	}
	if len(d) == 0 || d[0] == '0' && (len(d) > 1 || len(s) > 1) || len(d) > 19 {
		return false
	}
	for _, c := range d {
		if c < '0' || c > '9' {
			return false
		}
	}
	_, err := strconv.ParseInt(string(s), 10, 64)
	return err == nil
}

// isSequenceEntry reports whether a line's text starts a block sequence entry.
func isSequenceEntry(t []byte) bool {
	return t[0] == '-' && (len(t) == 1 || t[1] == ' ')
}

// isDocumentMarker reports a "---" or "..." line: a document boundary.
func isDocumentMarker(t []byte) bool {
	return len(t) >= 3 && (string(t[:3]) == "---" || string(t[:3]) == "...") && (len(t) == 3 || t[3] == ' ')
}

func trimSpaces(b []byte) []byte { return bytes.Trim(b, " ") }

// printable reports whether data is valid UTF-8 made of what the YAML reader accepts and
// this reader handles: tab, LF and printable characters; no CR (its line breaks), no BOM,
// no NEL or line and paragraph separators (YAML 1.1 line breaks).
func printable(data []byte) bool {
	for i := 0; i < len(data); {
		c := data[i]
		if c < utf8.RuneSelf {
			if c < ' ' && c != '\n' && c != '\t' || c == 0x7f {
				return false
			}
			i++
			continue
		}
		r, w := utf8.DecodeRune(data[i:])
		switch {
		case r == utf8.RuneError && w == 1, r <= 0x9f, r == 0xfeff, r == 0xfffe, r == 0xffff, r == 0x2028, r == 0x2029:
			return false
		}
		i += w
	}
	return true
}

// appendString appends s as a JSON string. s is valid UTF-8 (printable checked the input
// and escapes only make valid runes).
func appendString(out, s []byte) []byte {
	const hex = "0123456789abcdef"
	out = append(out, '"')
	start := 0
	for i, c := range s {
		if c >= ' ' && c != '"' && c != '\\' {
			continue
		}
		out = append(out, s[start:i]...)
		switch c {
		case '"', '\\':
			out = append(out, '\\', c)
		case '\n':
			out = append(out, '\\', 'n')
		case '\t':
			out = append(out, '\\', 't')
		case '\r':
			out = append(out, '\\', 'r')
		default:
			out = append(out, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	out = append(out, s[start:]...)
	return append(out, '"')
}
