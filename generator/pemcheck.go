package generator

import (
	"fmt"
	"slices"
	"strings"

	"github.com/magnum-gitops/magnum-gitops/internal/byteset"
)

// The PEM block types checkPEM accepts for certificates and for private keys. They are
// variables so that no call builds the list again.
var (
	pemCertificate = []string{"CERTIFICATE"}
	pemPrivateKey  = []string{"PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY"}
)

// checkPEM checks that s holds PEM blocks of one of the wanted types, without ever putting
// the value into the message. The blocks are those encoding/pem.Decode finds, one after the
// other (see pemBlockType).
func checkPEM(p *problems, field, s string, types ...string) {
	n := 0
	for {
		typ, rest, ok := pemBlockType(s)
		if !ok {
			break
		}
		s = rest
		if !slices.Contains(types, typ) {
			p.add(field, "PEM block %d is a %q, want %s", n+1, typ, fmt.Sprint(types))
			return
		}
		n++
	}
	if n == 0 {
		p.add(field, "must be PEM (%s)", types[0])
	}
}

// The markers of encoding/pem.
const (
	pemStart     = "\n-----BEGIN "
	pemEnd       = "\n-----END "
	pemEndOfLine = "-----"
)

// pemBlockType is encoding/pem.Decode (Go 1.26) reduced to what checkPEM needs: the type of
// the block Decode returns and the rest it returns with it, or ok false where Decode returns
// no block. Every render checks nine PEM values of a cluster's Secrets, and Decode spent
// most of its time on work checkPEM throws away: it searches the BEGIN line backwards with a
// Rabin-Karp scan of the whole certificate body (bytes.LastIndex), allocates the Block, its
// header map and type, and decodes the base64 into a new slice. Here the search runs
// forwards with the vectorised strings.Index (lastIndex), headers are only noted, the type
// is a substring, and the base64 is only checked (isBase64); the input stays a string, so
// nothing is copied. Everything else is Decode's code statement by statement, so every
// input gets Decode's blocks: TestPEMBlockType and FuzzPEMBlockType hold the two equal.
// Kept because the full render misses its 200 µs target with Decode in its place
// (docs/benchmarks.md).
func pemBlockType(data string) (typ, rest string, ok bool) {
	rest = data
	endTrailerIndex := 0
	for {
		// Past the first attempt, skip the END line already seen.
		if endTrailerIndex < 0 || endTrailerIndex > len(rest) {
			return "", data, false
		}
		rest = rest[endTrailerIndex:]

		// The first END line, and the last BEGIN line before it.
		endIndex := strings.Index(rest, pemEnd)
		if endIndex < 0 {
			return "", data, false
		}
		endTrailerIndex = endIndex + len(pemEnd)
		beginIndex := lastIndex(rest[:endIndex], pemStart[1:])
		if beginIndex < 0 || (beginIndex > 0 && rest[beginIndex-1] != '\n') {
			continue
		}
		rest = rest[beginIndex+len(pemStart)-1:]
		endIndex -= beginIndex + len(pemStart) - 1
		endTrailerIndex -= beginIndex + len(pemStart) - 1

		typeLine, next, consumed := pemLine(rest)
		rest = next
		endIndex -= consumed
		endTrailerIndex -= consumed
		if !strings.HasSuffix(typeLine, pemEndOfLine) {
			continue
		}
		typeLine = typeLine[:len(typeLine)-len(pemEndOfLine)]

		// Header lines ("Key: Value"); Decode keeps them in a map, only whether there was
		// one matters below.
		headers := false
		for {
			if len(rest) == 0 {
				return "", data, false
			}
			line, next, consumed := pemLine(rest)
			if strings.IndexByte(line, ':') < 0 {
				break
			}
			headers = true
			rest = next
			endIndex -= consumed
			endTrailerIndex -= consumed
		}
		if headers && endIndex < 0 {
			continue
		}

		// The END line must name the same type and end in five dashes and blanks.
		endTrailer := rest[endTrailerIndex:]
		endTrailerLen := len(typeLine) + len(pemEndOfLine)
		if len(endTrailer) < endTrailerLen {
			continue
		}
		restOfEndLine := endTrailer[endTrailerLen:]
		endTrailer = endTrailer[:endTrailerLen]
		if !strings.HasPrefix(endTrailer, typeLine) || !strings.HasSuffix(endTrailer, pemEndOfLine) {
			continue
		}
		if s, _, _ := pemLine(restOfEndLine); len(s) != 0 {
			continue
		}

		// Decode removes spaces and tabs from the body and decodes it with
		// base64.StdEncoding; a body that does not decode is no block.
		if endIndex > 0 && !isBase64(rest[:endIndex]) {
			continue
		}

		// The -1: pemEnd may have matched without its newline, when the block is empty.
		_, rest, _ = pemLine(rest[endIndex+len(pemEnd)-1:])
		return typeLine, rest, true
	}
}

// lastIndex is strings.LastIndex(s, sep) for a non-empty sep, found with the vectorised
// strings.Index: it goes from one occurrence to the next, and a certificate body has none.
func lastIndex(s, sep string) int {
	last := -1
	for {
		i := strings.Index(s[last+1:], sep)
		if i < 0 {
			return last
		}
		last += 1 + i
	}
}

// pemLine is encoding/pem's getLine: the first \n or \r\n delimited line without trailing
// blanks, the rest after the line break, and the number of bytes consumed.
func pemLine(data string) (line, rest string, consumed int) {
	i := strings.IndexByte(data, '\n')
	var j int
	if i < 0 {
		i = len(data)
		j = i
	} else {
		j = i + 1
		if i > 0 && data[i-1] == '\r' {
			i--
		}
	}
	return strings.TrimRight(data[0:i], " \t"), data[j:], j
}

// base64Alphabet is 1 for the characters of base64.StdEncoding's alphabet, 0 for others.
var base64Alphabet = func() (t [256]uint8) {
	for c, in := range byteset.New("A-Za-z0-9+/") {
		if in {
			t[c] = 1
		}
	}
	return t
}()

// isBase64 reports whether a PEM body decodes: whether base64.StdEncoding.Decode accepts s
// once encoding/pem has removed its spaces and tabs. Decode skips \r and \n anywhere and
// accepts characters of the alphabet in groups of four, the last group possibly completed
// by "=" or "==" with nothing but line breaks after; it does not check the unused bits of
// a padded group. TestIsBase64 and FuzzIsBase64 hold this equal to Decode.
func isBase64(s string) bool {
	n, pad := 0, 0 // characters of the alphabet, then of padding
	for i := 0; i < len(s); {
		// A body is lines of 64 characters of the alphabet: take them eight at a time,
		// with one test for all eight.
		if pad == 0 && i+8 <= len(s) {
			w := s[i : i+8]
			if base64Alphabet[w[0]]&base64Alphabet[w[1]]&base64Alphabet[w[2]]&base64Alphabet[w[3]]&
				base64Alphabet[w[4]]&base64Alphabet[w[5]]&base64Alphabet[w[6]]&base64Alphabet[w[7]] == 1 {
				n += 8
				i += 8
				continue
			}
		}
		switch c := s[i]; {
		case c == '\n' || c == '\r' || c == ' ' || c == '\t':
		case c == '=':
			pad++
		case pad == 0 && base64Alphabet[c] == 1:
			n++
		default:
			return false
		}
		i++
	}
	switch pad {
	case 0:
		return n%4 == 0
	case 1:
		return n%4 == 3
	case 2:
		return n%4 == 2
	}
	return false
}
