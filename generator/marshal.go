package generator

// A direct JSON → YAML serialiser for MarshalObject.
//
// The reference path (marshalObjectReference) turns an object into JSON, decodes it into a
// map, drops the empty creationTimestamp and status, encodes it again and hands the JSON to
// sigs.k8s.io/yaml.JSONToYAML, which parses it with go.yaml.in/yaml/v2 into generic values
// and marshals those again: four serialisations per file. A full render with it misses its
// target (≤ 200 µs) about fivefold, which BenchmarkRenderFilesSerialiser shows beside this
// file's path in the same run (docs/benchmarks.md): the only reason this port exists. Unchanged objects are not serialised at all (reconciler's Gate).
//
// The fast path here parses the object's JSON once into a small tree (strings point into
// the JSON buffer unless they carry escapes) and writes YAML from it with the parts of the
// go-yaml v2 emitter (emitterc.go, encode.go, resolve.go, sorter.go, v2.4.4) that the
// reference path exercises, ported statement by statement: the type of each JSON number
// and string as yaml.v2 resolves it, the scalar analysis and style selection, the plain,
// single-quoted, double-quoted and literal writers, block mappings and sequences, flow {}
// and [] for empty ones, and the "natural" key order of the map sorter.
//
// marshalYAML does the same for sigs.k8s.io/yaml.Marshal (nothing dropped).
//
// Whatever the port does not cover makes the fast path give up (errSlowPath) and
// MarshalObject falls back to the reference path, which therefore still decides the output
// (or the error) of every unusual input:
//   - a scalar that would be folded at the emitter's line width (80 columns unless
//     yaml.FutureLineWrap was called: the fast path never folds, so output does not depend
//     on that global switch);
//   - a key that is not a simple key (multi-line or longer than 128 bytes), not ASCII, or
//     holds a run of 19 or more digits;
//   - a map whose keys the sorter's comparison does not order consistently (yaml.v2 then
//     writes them in an order that depends on Go's map iteration, so there is no single
//     reference output to reproduce);
//   - strings with characters the YAML reader rejects or treats specially when it reads the
//     re-encoded JSON (DEL, C1 controls, U+FEFF, U+FFFE, U+FFFF, U+2028, U+2029), invalid
//     UTF-8, or \u escapes of surrogates;
//   - a document that is not a JSON object, has duplicate keys, or nests deeper than 1000.
//
// TestMarshalObjectMatchesReference and FuzzMarshalObject hold the two paths byte for byte
// equal.

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/magnum-gitops/magnum-gitops/internal/yamlv2"
)

// errSlowPath tells MarshalObject to use the reference serialiser.
var errSlowPath = errors.New("generator: input outside the fast YAML path")

const (
	jNull byte = iota
	jFalse
	jTrue
	jNumber
	jString
	jArray
	jObject
)

// span is a byte range of the JSON buffer, of the unescaped strings (esc), or of the slab.
type span struct {
	off, n int32
	esc    bool
}

// jnode is one JSON value; in an object, key is the member name. Nodes hold no pointers,
// so building the tree costs the garbage collector nothing.
type jnode struct {
	kind byte
	key  span
	str  span // string content or number text
	kids span // children in fastMarshaler.slab
}

const (
	maxFastDepth = 1000
	maxFastJSON  = 1 << 30
)

// fastMarshaler holds the buffers one conversion needs; it is pooled.
type fastMarshaler struct {
	js    bytes.Buffer // the object's JSON
	enc   *json.Encoder
	data  []byte  // js.Bytes() during a conversion
	stack []jnode // children of the containers being parsed
	slab  []jnode // the finished containers' children
	strs  []byte  // unescaped strings
	e     yamlEmitter
}

var fastPool = sync.Pool{New: func() any {
	m := &fastMarshaler{}
	m.enc = json.NewEncoder(&m.js)
	m.e.m = m
	return m
}}

// bytes returns the bytes of a string span.
func (m *fastMarshaler) bytes(s span) []byte {
	if s.esc {
		return m.strs[s.off : s.off+s.n : s.off+s.n]
	}
	return m.data[s.off : s.off+s.n : s.off+s.n]
}

// kids returns a container's children.
func (m *fastMarshaler) kids(n *jnode) []jnode {
	return m.slab[n.kids.off : n.kids.off+n.kids.n : n.kids.off+n.kids.n]
}

// marshalObjectFast is MarshalObject's fast path. It returns errSlowPath when the input
// is outside what it reproduces exactly, and json errors as the reference path does.
func marshalObjectFast(obj any) ([]byte, error) { return marshalFast(obj, true) }

// marshalYAML is sigs.k8s.io/yaml.Marshal (JSON, then JSONToYAML) for a JSON object, byte
// for byte; reference, which should be yaml.Marshal, serialises what the fast path does
// not reproduce exactly (see the top of this file) and returns its errors.
func marshalYAML(obj any, reference func(any) ([]byte, error)) ([]byte, error) {
	if b, err := marshalFast(obj, false); err == nil {
		return b, nil
	}
	return reference(obj)
}

// marshalFast writes obj's JSON as YAML; clean drops what MarshalObject drops.
func marshalFast(obj any, clean bool) ([]byte, error) {
	m := fastPool.Get().(*fastMarshaler)
	defer m.release()
	m.js.Reset()
	if err := m.enc.Encode(obj); err != nil {
		return nil, err
	}
	return m.yaml(m.js.Bytes(), clean)
}

// marshalFastJSON is marshalFast for an object already encoded by encoding/json.
func marshalFastJSON(j []byte, clean bool) ([]byte, error) {
	m := fastPool.Get().(*fastMarshaler)
	defer m.release()
	return m.yaml(j, clean)
}

// yaml writes the JSON document data as YAML.
func (m *fastMarshaler) yaml(data []byte, clean bool) ([]byte, error) {
	m.data = data
	if len(m.data) > maxFastJSON {
		return nil, errSlowPath
	}
	root, ok := m.parse()
	if !ok || root.kind != jObject {
		return nil, errSlowPath
	}
	if clean {
		m.cleanTop(&root)
	}
	e := &m.e
	e.reset()
	e.document(&root)
	if e.fail {
		return nil, errSlowPath
	}
	return bytes.Clone(e.out), nil
}

func (m *fastMarshaler) release() {
	m.data = nil
	m.slab = m.slab[:0]
	m.stack = m.stack[:0]
	m.strs = m.strs[:0]
	m.e.keys = m.e.keys[:0]
	if m.js.Cap() > 1<<20 || cap(m.e.out) > 1<<20 || cap(m.strs) > 1<<20 || cap(m.slab) > 1<<16 {
		return
	}
	fastPool.Put(m)
}

// cleanTop drops metadata.creationTimestamp and an empty status, as the reference does.
func (m *fastMarshaler) cleanTop(root *jnode) {
	kids := m.kids(root)
	out := kids[:0]
	for i := range kids {
		k := kids[i]
		switch string(m.bytes(k.key)) {
		case "metadata":
			if k.kind == jObject {
				md := m.kids(&k)
				kept := md[:0]
				for _, c := range md {
					if string(m.bytes(c.key)) != "creationTimestamp" {
						kept = append(kept, c)
					}
				}
				k.kids.n = int32(len(kept))
			}
		case "status":
			if k.kind == jObject && k.kids.n == 0 {
				continue
			}
		}
		out = append(out, k)
	}
	root.kids.n = int32(len(out))
}

// --- JSON parsing ---------------------------------------------------------------------

type jparser struct {
	m     *fastMarshaler
	data  []byte
	i     int
	depth int
	bad   bool
}

func (m *fastMarshaler) parse() (jnode, bool) {
	p := jparser{m: m, data: m.data}
	n := p.value()
	p.ws()
	if p.bad || p.i != len(p.data) {
		return jnode{}, false
	}
	return n, true
}

func (p *jparser) ws() {
	for p.i < len(p.data) {
		switch p.data[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *jparser) value() jnode {
	p.ws()
	if p.bad || p.i >= len(p.data) {
		p.bad = true
		return jnode{}
	}
	switch c := p.data[p.i]; {
	case c == '{':
		return p.container(jObject, '}')
	case c == '[':
		return p.container(jArray, ']')
	case c == '"':
		return jnode{kind: jString, str: p.string()}
	case c == 't':
		return p.literal("true", jTrue)
	case c == 'f':
		return p.literal("false", jFalse)
	case c == 'n':
		return p.literal("null", jNull)
	case c == '-' || c >= '0' && c <= '9':
		return jnode{kind: jNumber, str: p.number()}
	}
	p.bad = true
	return jnode{}
}

func (p *jparser) literal(s string, kind byte) jnode {
	if !bytes.HasPrefix(p.data[p.i:], []byte(s)) {
		p.bad = true
		return jnode{}
	}
	p.i += len(s)
	return jnode{kind: kind}
}

// number scans a JSON number (RFC 8259 grammar).
func (p *jparser) number() span {
	d, start := p.data, p.i
	i := p.i
	if i < len(d) && d[i] == '-' {
		i++
	}
	digits := func() int {
		j := i
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
		return i - j
	}
	if i < len(d) && d[i] == '0' {
		i++
	} else if digits() == 0 {
		p.bad = true
		return span{}
	}
	if i < len(d) && d[i] == '.' {
		i++
		if digits() == 0 {
			p.bad = true
			return span{}
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if digits() == 0 {
			p.bad = true
			return span{}
		}
	}
	p.i = i
	return span{off: int32(start), n: int32(i - start)}
}

// string scans a JSON string at p.i and returns its content, unescaped.
func (p *jparser) string() span {
	d := p.data
	start := p.i + 1
	i := start
	for i < len(d) {
		c := d[i]
		if c == '"' {
			p.i = i + 1
			return span{off: int32(start), n: int32(i - start)}
		}
		if c == '\\' {
			return p.escapedString(start)
		}
		if c < 0x20 {
			p.bad = true
			return span{}
		}
		i++
	}
	p.bad = true
	return span{}
}

func (p *jparser) escapedString(start int) span {
	d := p.data
	m := p.m
	begin := len(m.strs)
	i := start
	for i < len(d) {
		c := d[i]
		switch {
		case c == '"':
			p.i = i + 1
			if len(m.strs) > maxFastJSON {
				p.bad = true
				return span{}
			}
			return span{off: int32(begin), n: int32(len(m.strs) - begin), esc: true}
		case c < 0x20:
			p.bad = true
			return span{}
		case c != '\\':
			j := i + 1
			for j < len(d) && d[j] >= 0x20 && d[j] != '"' && d[j] != '\\' {
				j++
			}
			m.strs = append(m.strs, d[i:j]...)
			i = j
			continue
		}
		if i+1 >= len(d) {
			p.bad = true
			return span{}
		}
		i += 2
		switch d[i-1] {
		case '"', '\\', '/':
			m.strs = append(m.strs, d[i-1])
		case 'b':
			m.strs = append(m.strs, '\b')
		case 'f':
			m.strs = append(m.strs, '\f')
		case 'n':
			m.strs = append(m.strs, '\n')
		case 'r':
			m.strs = append(m.strs, '\r')
		case 't':
			m.strs = append(m.strs, '\t')
		case 'u':
			if i+4 > len(d) {
				p.bad = true
				return span{}
			}
			var v rune
			for _, h := range d[i : i+4] {
				switch {
				case h >= '0' && h <= '9':
					v = v<<4 | rune(h-'0')
				case h >= 'a' && h <= 'f':
					v = v<<4 | rune(h-'a'+10)
				case h >= 'A' && h <= 'F':
					v = v<<4 | rune(h-'A'+10)
				default:
					p.bad = true
					return span{}
				}
			}
			if v >= 0xD800 && v <= 0xDFFF {
				// Surrogates: leave their pairing rules to the reference path.
				p.bad = true
				return span{}
			}
			m.strs = utf8.AppendRune(m.strs, v)
			i += 4
		default:
			p.bad = true
			return span{}
		}
	}
	p.bad = true
	return span{}
}

func (p *jparser) container(kind, end byte) jnode {
	p.depth++
	if p.depth > maxFastDepth {
		p.bad = true
		return jnode{}
	}
	m := p.m
	mark := len(m.stack)
	p.i++ // { or [
	p.ws()
	if p.i < len(p.data) && p.data[p.i] == end {
		p.i++
	} else {
		for !p.bad {
			var key span
			if kind == jObject {
				p.ws()
				if p.i >= len(p.data) || p.data[p.i] != '"' {
					p.bad = true
					break
				}
				key = p.string()
				p.ws()
				if p.i >= len(p.data) || p.data[p.i] != ':' {
					p.bad = true
					break
				}
				p.i++
			}
			v := p.value()
			v.key = key
			m.stack = append(m.stack, v)
			p.ws()
			if p.i >= len(p.data) {
				p.bad = true
				break
			}
			if p.data[p.i] == ',' {
				p.i++
				continue
			}
			if p.data[p.i] == end {
				p.i++
				break
			}
			p.bad = true
		}
	}
	p.depth--
	off := len(m.slab)
	m.slab = append(m.slab, m.stack[mark:]...)
	m.stack = m.stack[:mark]
	return jnode{kind: kind, kids: span{off: int32(off), n: int32(len(m.slab) - off)}}
}

// --- YAML emitter (port of go.yaml.in/yaml/v2 emitterc.go for the events yaml.Marshal
// produces from JSON-shaped values; canonical off, unicode on, indent 2, LF breaks) --------

type scalarStyle int

const (
	stylePlain scalarStyle = iota
	styleSingleQuoted
	styleDoubleQuoted
	styleLiteral
)

type yamlEmitter struct {
	m          *fastMarshaler
	out        []byte
	column     int
	indent     int
	whitespace bool
	indention  bool
	fail       bool
	numBuf     []byte
	keys       []int32 // stack of key orders, see sortedKeys
}

func (e *yamlEmitter) reset() {
	e.out = e.out[:0]
	e.column = 0
	e.indent = -1
	e.whitespace = true
	e.indention = true
	e.fail = false
}

// document emits one implicit document holding n, as encoder.marshalDoc does.
func (e *yamlEmitter) document(n *jnode) {
	e.node(n, false, false)
	if e.fail {
		return
	}
	// yaml_emitter_emit_document_end: implicit end, no "...".
	e.writeIndent()
}

// node is yaml_emitter_emit_node for one value.
func (e *yamlEmitter) node(n *jnode, mappingContext, simpleKey bool) {
	if e.fail {
		return
	}
	switch n.kind {
	case jObject:
		if n.kids.n == 0 {
			e.emptyFlow('{', '}')
			return
		}
		e.blockMapping(n)
	case jArray:
		if n.kids.n == 0 {
			e.emptyFlow('[', ']')
			return
		}
		e.blockSequence(n, mappingContext)
	case jString:
		e.stringScalar(e.m.bytes(n.str), simpleKey)
	case jNumber:
		e.number(e.m.bytes(n.str), simpleKey)
	case jTrue:
		e.scalar([]byte("true"), stylePlain, simpleKey)
	case jFalse:
		e.scalar([]byte("false"), stylePlain, simpleKey)
	case jNull:
		e.scalar([]byte("null"), stylePlain, simpleKey)
	}
}

// emptyFlow writes an empty flow mapping or sequence
// (yaml_emitter_emit_flow_mapping_key / _sequence_item with first && END).
func (e *yamlEmitter) emptyFlow(opening, closing byte) {
	e.writeIndicator(opening, true, true, false)
	e.writeIndicator(closing, false, false, false)
}

func (e *yamlEmitter) increaseIndent(flow, indentless bool) {
	if e.indent < 0 {
		if flow {
			e.indent = 2
		} else {
			e.indent = 0
		}
	} else if !indentless {
		e.indent += 2
	}
}

func (e *yamlEmitter) blockMapping(n *jnode) {
	kids := e.m.kids(n)
	base := len(e.keys)
	order, ok := e.sortedKeys(kids)
	if !ok {
		e.fail = true
		return
	}
	saved := e.indent
	e.increaseIndent(false, false)
	for _, i := range order {
		kid := &kids[i]
		e.writeIndent()
		// The key; yaml_emitter_check_simple_key is checked in scalar (simpleKey).
		e.stringScalar(e.m.bytes(kid.key), true)
		e.writeIndicator(':', false, false, false)
		e.node(kid, true, false)
		if e.fail {
			return
		}
	}
	e.indent = saved
	e.keys = e.keys[:base]
}

func (e *yamlEmitter) blockSequence(n *jnode, mappingContext bool) {
	saved := e.indent
	e.increaseIndent(false, mappingContext && !e.indention)
	kids := e.m.kids(n)
	for i := range kids {
		e.writeIndent()
		e.writeIndicator('-', true, false, true)
		e.node(&kids[i], false, false)
		if e.fail {
			return
		}
	}
	e.indent = saved
}

// number writes a JSON number as yaml.v2 decodes it (resolve: int, then uint64, then
// float64, else the text as a string) and encodes that value again.
func (e *yamlEmitter) number(text []byte, simpleKey bool) {
	s := string(text)
	b := e.numBuf[:0]
	// ParseInt and ParseUint refuse a fraction or an exponent; skip their error allocation.
	integer := bytes.IndexAny(text, ".eE") < 0
	var (
		iv, uv           = int64(0), uint64(0)
		ierr, uerr error = strconv.ErrSyntax, strconv.ErrSyntax
		fv         float64
		ferr       error
	)
	if integer {
		if iv, ierr = strconv.ParseInt(s, 0, 64); ierr != nil {
			uv, uerr = strconv.ParseUint(s, 0, 64)
		}
	}
	switch {
	case ierr == nil:
		b = strconv.AppendInt(b, iv, 10)
	case uerr == nil:
		b = strconv.AppendUint(b, uv, 10)
	default:
		fv, ferr = strconv.ParseFloat(s, 64)
		if ferr != nil || !yamlv2.IsYAMLStyleFloat(s) {
			e.stringScalar(text, simpleKey)
			return
		}
		b = strconv.AppendFloat(b, fv, 'g', -1, 64)
		switch string(b) {
		case "+Inf":
			b = append(b[:0], ".inf"...)
		case "-Inf":
			b = append(b[:0], "-.inf"...)
		case "NaN":
			b = append(b[:0], ".nan"...)
		}
	}
	e.numBuf = b
	e.scalar(b, stylePlain, simpleKey)
}

// stringScalar is encoder.stringv with no tag.
func (e *yamlEmitter) stringScalar(s []byte, simpleKey bool) {
	if !fastSafeString(s) {
		e.fail = true
		return
	}
	canUsePlain := yamlv2.ResolvesToString(s) && !yamlv2.IsBase60Float(s)
	style := styleDoubleQuoted
	switch {
	case bytes.IndexByte(s, '\n') >= 0:
		style = styleLiteral
	case canUsePlain:
		style = stylePlain
	}
	e.scalar(s, style, simpleKey)
}

// fastSafeString rejects invalid UTF-8 (yaml.v2 would write !!binary) and the characters
// the YAML reader refuses or folds when it reads them from the re-encoded JSON.
func fastSafeString(s []byte) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c == 0x7F {
				return false
			}
			i++
			continue
		}
		r, w := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && w <= 1 {
			return false
		}
		switch {
		case r >= 0x80 && r <= 0x9F, r == 0x2028, r == 0x2029, r == 0xFEFF, r == 0xFFFE, r == 0xFFFF:
			return false
		}
		i += w
	}
	return true
}

// scalarAnalysis is the part of emitter.scalar_data that style selection uses.
type scalarAnalysis struct {
	multiline          bool
	blockPlainAllowed  bool
	singleQuotedAllowd bool
	blockAllowed       bool
}

// scalar is yaml_emitter_emit_scalar: analyse, select the style, write.
func (e *yamlEmitter) scalar(value []byte, style scalarStyle, simpleKey bool) {
	if e.fail {
		return
	}
	a := analyzeScalar(value)
	if simpleKey && (a.multiline || len(value) > 128) {
		// Not a simple key: yaml.v2 would write "? key". Leave it to the reference.
		e.fail = true
		return
	}
	// yaml_emitter_select_scalar_style (flow_level is always 0 here).
	if simpleKey && a.multiline {
		style = styleDoubleQuoted
	}
	if style == stylePlain {
		if !a.blockPlainAllowed {
			style = styleSingleQuoted
		}
		if len(value) == 0 && simpleKey {
			style = styleSingleQuoted
		}
	}
	if style == styleSingleQuoted && !a.singleQuotedAllowd {
		style = styleDoubleQuoted
	}
	if style == styleLiteral && (!a.blockAllowed || simpleKey) {
		style = styleDoubleQuoted
	}
	saved := e.indent
	e.increaseIndent(true, false)
	switch style {
	case stylePlain:
		e.writePlain(value, !simpleKey)
	case styleSingleQuoted:
		e.writeSingleQuoted(value, !simpleKey)
	case styleDoubleQuoted:
		e.writeDoubleQuoted(value, !simpleKey)
	case styleLiteral:
		e.writeLiteral(value)
	}
	e.indent = saved
}

// analyzeScalar is yaml_emitter_analyze_scalar.
func analyzeScalar(value []byte) scalarAnalysis {
	var (
		blockIndicators   = false
		flowIndicators    = false
		lineBreaks        = false
		specialCharacters = false

		leadingSpace  = false
		leadingBreak  = false
		trailingSpace = false
		trailingBreak = false
		breakSpace    = false
		spaceBreak    = false

		precededByWhitespace = false
		followedByWhitespace = false
		previousSpace        = false
		previousBreak        = false
	)
	if len(value) == 0 {
		return scalarAnalysis{multiline: false, blockPlainAllowed: true, singleQuotedAllowd: true, blockAllowed: false}
	}
	if len(value) >= 3 && ((value[0] == '-' && value[1] == '-' && value[2] == '-') || (value[0] == '.' && value[1] == '.' && value[2] == '.')) {
		blockIndicators = true
		flowIndicators = true
	}
	precededByWhitespace = true
	for i, w := 0, 0; i < len(value); i += w {
		if i > 0 && quietMid[value[i]] {
			// A run of characters the loop body below would only note as "not space, not
			// break, not blank" (printable ASCII that is no indicator after the start).
			for i < len(value) && quietMid[value[i]] {
				i++
			}
			previousSpace = false
			previousBreak = false
			precededByWhitespace = false
			w = 0
			continue
		}
		w = width(value[i])
		followedByWhitespace = i+w >= len(value) || isBlank(value, i+w)

		if i == 0 {
			switch value[i] {
			case '#', ',', '[', ']', '{', '}', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`':
				flowIndicators = true
				blockIndicators = true
			case '?', ':':
				flowIndicators = true
				if followedByWhitespace {
					blockIndicators = true
				}
			case '-':
				if followedByWhitespace {
					flowIndicators = true
					blockIndicators = true
				}
			}
		} else {
			switch value[i] {
			case ',', '?', '[', ']', '{', '}':
				flowIndicators = true
			case ':':
				flowIndicators = true
				if followedByWhitespace {
					blockIndicators = true
				}
			case '#':
				if precededByWhitespace {
					flowIndicators = true
					blockIndicators = true
				}
			}
		}

		if !isPrintable(value, i) { // emitter.unicode is true
			specialCharacters = true
		}
		if isSpace(value, i) {
			if i == 0 {
				leadingSpace = true
			}
			if i+width(value[i]) == len(value) {
				trailingSpace = true
			}
			if previousBreak {
				breakSpace = true
			}
			previousSpace = true
			previousBreak = false
		} else if isBreak(value, i) {
			lineBreaks = true
			if i == 0 {
				leadingBreak = true
			}
			if i+width(value[i]) == len(value) {
				trailingBreak = true
			}
			if previousSpace {
				spaceBreak = true
			}
			previousSpace = false
			previousBreak = true
		} else {
			previousSpace = false
			previousBreak = false
		}
		precededByWhitespace = isBlankz(value, i)
	}
	_ = flowIndicators // only matters in flow context, which never holds a scalar here

	a := scalarAnalysis{multiline: lineBreaks, blockPlainAllowed: true, singleQuotedAllowd: true, blockAllowed: true}
	if leadingSpace || leadingBreak || trailingSpace || trailingBreak {
		a.blockPlainAllowed = false
	}
	if trailingSpace {
		a.blockAllowed = false
	}
	if breakSpace {
		a.blockPlainAllowed = false
		a.singleQuotedAllowd = false
	}
	if spaceBreak || specialCharacters {
		a.blockPlainAllowed = false
		a.singleQuotedAllowd = false
		a.blockAllowed = false
	}
	if lineBreaks {
		a.blockPlainAllowed = false
	}
	if blockIndicators {
		a.blockPlainAllowed = false
	}
	return a
}

// quietMid marks the printable ASCII characters that are no indicator inside a scalar.
var quietMid = func() (t [256]bool) {
	for c := 0x21; c <= 0x7E; c++ {
		t[c] = true
	}
	for _, c := range ",?[]{}:#" {
		t[c] = false
	}
	return t
}()

// Character classes of yamlprivateh.go. value is valid UTF-8 here, so the look-ahead of
// the multi-byte checks stays in bounds.

func isPrintable(b []byte, i int) bool {
	return ((b[i] == 0x0A) ||
		(b[i] >= 0x20 && b[i] <= 0x7E) ||
		(b[i] == 0xC2 && b[i+1] >= 0xA0) ||
		(b[i] > 0xC2 && b[i] < 0xED) ||
		(b[i] == 0xED && b[i+1] < 0xA0) ||
		(b[i] == 0xEE) ||
		(b[i] == 0xEF &&
			!(b[i+1] == 0xBB && b[i+2] == 0xBF) &&
			!(b[i+1] == 0xBF && (b[i+2] == 0xBE || b[i+2] == 0xBF))))
}

func isBOMAt0(b []byte) bool {
	return len(b) >= 3 && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF
}

func isSpace(b []byte, i int) bool { return b[i] == ' ' }

func isBlank(b []byte, i int) bool { return b[i] == ' ' || b[i] == '\t' }

func isBreak(b []byte, i int) bool {
	return (b[i] == '\r' ||
		b[i] == '\n' ||
		b[i] == 0xC2 && b[i+1] == 0x85 ||
		b[i] == 0xE2 && b[i+1] == 0x80 && b[i+2] == 0xA8 ||
		b[i] == 0xE2 && b[i+1] == 0x80 && b[i+2] == 0xA9)
}

// isBlankz is is_blankz; the terminating NUL of the C original is never reached (the
// caller only passes i < len(b)), but a NUL byte in the value counts, as in yaml.v2.
func isBlankz(b []byte, i int) bool {
	return (b[i] == ' ' || b[i] == '\t' ||
		b[i] == '\r' ||
		b[i] == '\n' ||
		b[i] == 0xC2 && b[i+1] == 0x85 ||
		b[i] == 0xE2 && b[i+1] == 0x80 && b[i+2] == 0xA8 ||
		b[i] == 0xE2 && b[i+1] == 0x80 && b[i+2] == 0xA9 ||
		b[i] == 0)
}

func width(b byte) int {
	if b&0x80 == 0x00 {
		return 1
	}
	if b&0xE0 == 0xC0 {
		return 2
	}
	if b&0xF0 == 0xE0 {
		return 3
	}
	if b&0xF8 == 0xF0 {
		return 4
	}
	return 0
}

// --- low-level writers (put, put_break, write, write_break) ---

func (e *yamlEmitter) put(c byte) {
	e.out = append(e.out, c)
	e.column++
}

func (e *yamlEmitter) putBreak() {
	e.out = append(e.out, '\n')
	e.column = 0
}

// write copies one character of s at *i.
func (e *yamlEmitter) write(s []byte, i *int) {
	w := width(s[*i])
	e.out = append(e.out, s[*i:*i+w]...)
	e.column++
	*i += w
}

func (e *yamlEmitter) writeBreak(s []byte, i *int) {
	if s[*i] == '\n' {
		e.putBreak()
		*i++
	} else {
		e.write(s, i)
		e.column = 0
	}
}

func (e *yamlEmitter) writeIndent() {
	indent := e.indent
	if indent < 0 {
		indent = 0
	}
	if !e.indention || e.column > indent || (e.column == indent && !e.whitespace) {
		e.putBreak()
	}
	for e.column < indent {
		e.put(' ')
	}
	e.whitespace = true
	e.indention = true
}

func (e *yamlEmitter) writeIndicator(indicator byte, needWhitespace, isWhitespace, isIndention bool) {
	if needWhitespace && !e.whitespace {
		e.put(' ')
	}
	e.put(indicator)
	e.whitespace = isWhitespace
	e.indention = e.indention && isIndention
}

// bestWidth is the emitter's line width. The writers below never fold: where yaml.v2
// would consider folding at this width, the fast path gives up instead.
const bestWidth = 80

func (e *yamlEmitter) writePlain(value []byte, allowBreaks bool) {
	if !e.whitespace {
		e.put(' ')
	}
	spaces := false
	breaks := false
	for i := 0; i < len(value); {
		if isSpace(value, i) {
			if allowBreaks && !spaces && e.column > bestWidth {
				e.fail = true
				return
			}
			e.write(value, &i)
			spaces = true
		} else if isBreak(value, i) {
			if !breaks && value[i] == '\n' {
				e.putBreak()
			}
			e.writeBreak(value, &i)
			e.indention = true
			breaks = true
		} else {
			if breaks {
				e.writeIndent()
			}
			if c := value[i]; c < utf8.RuneSelf && c != '\r' && c != '\n' {
				j := i + 1
				for j < len(value) && value[j] < utf8.RuneSelf && value[j] != ' ' && value[j] != '\r' && value[j] != '\n' {
					j++
				}
				e.out = append(e.out, value[i:j]...)
				e.column += j - i
				i = j
			} else {
				e.write(value, &i)
			}
			e.indention = false
			spaces = false
			breaks = false
		}
	}
	e.whitespace = false
	e.indention = false
}

func (e *yamlEmitter) writeSingleQuoted(value []byte, allowBreaks bool) {
	e.writeIndicator('\'', true, false, false)
	spaces := false
	breaks := false
	for i := 0; i < len(value); {
		if isSpace(value, i) {
			if allowBreaks && !spaces && e.column > bestWidth {
				e.fail = true
				return
			}
			e.write(value, &i)
			spaces = true
		} else if isBreak(value, i) {
			if !breaks && value[i] == '\n' {
				e.putBreak()
			}
			e.writeBreak(value, &i)
			e.indention = true
			breaks = true
		} else {
			if breaks {
				e.writeIndent()
			}
			if value[i] == '\'' {
				e.put('\'')
			}
			e.write(value, &i)
			e.indention = false
			spaces = false
			breaks = false
		}
	}
	e.writeIndicator('\'', false, false, false)
	e.whitespace = false
	e.indention = false
}

func (e *yamlEmitter) writeDoubleQuoted(value []byte, allowBreaks bool) {
	spaces := false
	e.writeIndicator('"', true, false, false)
	bom := isBOMAt0(value)
	for i := 0; i < len(value); {
		if !isPrintable(value, i) || bom || isBreak(value, i) || value[i] == '"' || value[i] == '\\' {
			octet := value[i]
			var w int
			var v rune
			switch {
			case octet&0x80 == 0x00:
				w, v = 1, rune(octet&0x7F)
			case octet&0xE0 == 0xC0:
				w, v = 2, rune(octet&0x1F)
			case octet&0xF0 == 0xE0:
				w, v = 3, rune(octet&0x0F)
			case octet&0xF8 == 0xF0:
				w, v = 4, rune(octet&0x07)
			}
			for k := 1; k < w; k++ {
				octet = value[i+k]
				v = (v << 6) + (rune(octet) & 0x3F)
			}
			i += w
			e.put('\\')
			switch v {
			case 0x00:
				e.put('0')
			case 0x07:
				e.put('a')
			case 0x08:
				e.put('b')
			case 0x09:
				e.put('t')
			case 0x0A:
				e.put('n')
			case 0x0b:
				e.put('v')
			case 0x0c:
				e.put('f')
			case 0x0d:
				e.put('r')
			case 0x1b:
				e.put('e')
			case 0x22:
				e.put('"')
			case 0x5c:
				e.put('\\')
			case 0x85:
				e.put('N')
			case 0xA0:
				e.put('_')
			case 0x2028:
				e.put('L')
			case 0x2029:
				e.put('P')
			default:
				if v <= 0xFF {
					e.put('x')
					w = 2
				} else if v <= 0xFFFF {
					e.put('u')
					w = 4
				} else {
					e.put('U')
					w = 8
				}
				for k := (w - 1) * 4; k >= 0; k -= 4 {
					digit := byte((v >> uint(k)) & 0x0F)
					if digit < 10 {
						e.put(digit + '0')
					} else {
						e.put(digit + 'A' - 10)
					}
				}
			}
			spaces = false
		} else if isSpace(value, i) {
			if allowBreaks && !spaces && e.column > bestWidth && i > 0 && i < len(value)-1 {
				e.fail = true
				return
			}
			e.write(value, &i)
			spaces = true
		} else {
			e.write(value, &i)
			spaces = false
		}
	}
	e.writeIndicator('"', false, false, false)
	e.whitespace = false
	e.indention = false
}

func (e *yamlEmitter) writeBlockScalarHints(value []byte) {
	if isSpace(value, 0) || isBreak(value, 0) {
		e.writeIndicator('0'+2, false, false, false) // best_indent
	}
	var chompHint byte
	if len(value) == 0 {
		chompHint = '-'
	} else {
		i := len(value) - 1
		for value[i]&0xC0 == 0x80 {
			i--
		}
		if !isBreak(value, i) {
			chompHint = '-'
		} else if i == 0 {
			chompHint = '+'
		} else {
			i--
			for value[i]&0xC0 == 0x80 {
				i--
			}
			if isBreak(value, i) {
				chompHint = '+'
			}
		}
	}
	if chompHint != 0 {
		e.writeIndicator(chompHint, false, false, false)
	}
}

func (e *yamlEmitter) writeLiteral(value []byte) {
	e.writeIndicator('|', true, false, false)
	e.writeBlockScalarHints(value)
	e.putBreak()
	e.indention = true
	e.whitespace = true
	breaks := true
	for i := 0; i < len(value); {
		if isBreak(value, i) {
			e.writeBreak(value, &i)
			e.indention = true
			breaks = true
		} else {
			if breaks {
				e.writeIndent()
			}
			j := i
			for j < len(value) && value[j] < utf8.RuneSelf && value[j] != '\r' && value[j] != '\n' {
				j++
			}
			if j > i {
				e.out = append(e.out, value[i:j]...)
				e.column += j - i
				i = j
			} else {
				e.write(value, &i)
			}
			e.indention = false
			breaks = false
		}
	}
}

// --- key order (sorter.go) ---------------------------------------------------------------

// sortedKeys returns the order in which yaml.v2 writes an object's members: sorter.go's
// keyList.Less on the (string) keys. It reports false when that order is not unique: a
// key is not ASCII or has a digit run that could overflow, two keys are equal, or Less
// is not a strict total order on these keys (then yaml.v2's order depends on map
// iteration).
//
// The order lives on top of e.keys; the caller truncates e.keys to its old length when
// done with it.
func (e *yamlEmitter) sortedKeys(kids []jnode) ([]int32, bool) {
	m := e.m
	base := len(e.keys)
	for i := range kids {
		if !plainASCIIKey(m.bytes(kids[i].key)) {
			return nil, false
		}
		e.keys = append(e.keys, int32(i))
	}
	order := e.keys[base:]
	key := func(i int32) []byte { return m.bytes(kids[i].key) }
	// Less agrees with a lexicographic order (non-alphanumerics by byte < digits <
	// letters by byte) on every pair whose first difference is not digit against digit.
	// If no neighbours differ first on two digits, no pair does, and the order is unique.
	ordered := func() (sorted, full bool) {
		for j := 1; j < len(order); j++ {
			a, b := key(order[j-1]), key(order[j])
			if !keyLess(a, b) || keyLess(b, a) {
				return false, false
			}
			if firstDifferenceIsDigits(a, b) {
				full = true
			}
		}
		return true, full
	}
	// encoding/json writes map keys sorted by bytes, which is mostly this order already.
	sorted, full := ordered()
	if !sorted {
		slices.SortFunc(order, func(a, b int32) int {
			if keyLess(key(a), key(b)) {
				return -1
			}
			if keyLess(key(b), key(a)) {
				return 1
			}
			return 0
		})
		if sorted, full = ordered(); !sorted {
			return nil, false // equal keys
		}
	}
	if full {
		for x := 0; x < len(order); x++ {
			for y := x + 1; y < len(order); y++ {
				a, b := key(order[x]), key(order[y])
				if !keyLess(a, b) || keyLess(b, a) {
					return nil, false
				}
			}
		}
	}
	return order, true
}

func plainASCIIKey(k []byte) bool {
	run := 0
	for _, c := range k {
		if c >= utf8.RuneSelf {
			return false
		}
		if c >= '0' && c <= '9' {
			run++
			if run >= 19 {
				return false
			}
		} else {
			run = 0
		}
	}
	return true
}

func firstDifferenceIsDigits(a, b []byte) bool {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return isDigitByte(a[i]) && isDigitByte(b[i])
		}
	}
	return false
}

func isDigitByte(c byte) bool  { return c >= '0' && c <= '9' }
func isLetterByte(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// keyLess is sorter.go's keyList.Less for two ASCII strings (rune index = byte index,
// unicode.IsLetter = A-Za-z, unicode.IsDigit = 0-9).
func keyLess(ar, br []byte) bool {
	for i := 0; i < len(ar) && i < len(br); i++ {
		if ar[i] == br[i] {
			continue
		}
		al := isLetterByte(ar[i])
		bl := isLetterByte(br[i])
		if al && bl {
			return ar[i] < br[i]
		}
		if al || bl {
			return bl
		}
		var ai, bi int
		var an, bn int64
		if ar[i] == '0' || br[i] == '0' {
			for j := i - 1; j >= 0 && isDigitByte(ar[j]); j-- {
				if ar[j] != '0' {
					an = 1
					bn = 1
					break
				}
			}
		}
		for ai = i; ai < len(ar) && isDigitByte(ar[ai]); ai++ {
			an = an*10 + int64(ar[ai]-'0')
		}
		for bi = i; bi < len(br) && isDigitByte(br[bi]); bi++ {
			bn = bn*10 + int64(br[bi]-'0')
		}
		if an != bn {
			return an < bn
		}
		if ai != bi {
			return ai < bi
		}
		return ar[i] < br[i]
	}
	return len(ar) < len(br)
}
