package yamlv2

import (
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestYAMLStyleFloat holds the hand-written matcher to resolve.go's regular expression.
func TestYAMLStyleFloat(t *testing.T) {
	re := regexp.MustCompile(`^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`)
	r := rand.New(rand.NewPCG(3, 4))
	const alpha = "0123456789.eE+-x"
	for i := 0; i < 200000; i++ {
		var b strings.Builder
		for n := r.IntN(8); n > 0; n-- {
			b.WriteByte(alpha[r.IntN(len(alpha))])
		}
		s := b.String()
		if got, want := IsYAMLStyleFloat(s), re.MatchString(s); got != want {
			t.Fatalf("IsYAMLStyleFloat(%q) = %v, want %v", s, got, want)
		}
	}
}

// TestResolvesToString holds ResolvesToString (with its shortcuts) to resolve.go's
// resolve("", s) as written there.
func TestResolvesToString(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	const alpha = "0123456789abefxoBOX_+-.eE:Tt Z~ny"
	fixed := []string{"", "0b-1", "0b_-1", "0_b-1", "-0b1", "-0b-1", "0x1F", "0o17", "1_000", "1e_-5", "1.33.7",
		"3e9b7c52-1d4a-4f8e-9b6c-2a7d5e8f1c03", "2024-01-01", "2024-1-2T03:04:05Z", "2024-01-01 10:00:00",
		"10.0.0.0/24", "+.inf", ".5", "1.", "+1", "-", "+", "0x", "0b", "9223372036854775808", "18446744073709551616",
		"-----BEGIN CERTIFICATE-----\nx", "1234-xx", "0X1f", "0O17", "0B11", "09", "-0x1F", "+0b1", "0x_1F", "9f3c1b2a4d5e4f6a"}
	for i := 0; i < 300000+len(fixed); i++ {
		var s string
		if i < len(fixed) {
			s = fixed[i]
		} else {
			var b strings.Builder
			for n := r.IntN(9); n > 0; n-- {
				b.WriteByte(alpha[r.IntN(len(alpha))])
			}
			s = b.String()
		}
		if got, want := ResolvesToString([]byte(s)), referenceResolvesToString(s); got != want {
			t.Fatalf("ResolvesToString(%q) = %v, want %v", s, got, want)
		}
	}
}

var referenceYAMLStyleFloat = regexp.MustCompile(`^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`)

// referenceResolvesToString is go.yaml.in/yaml/v2 resolve.go's resolve("", in) reduced to
// "is the tag !!str".
func referenceResolvesToString(in string) bool {
	hint := byte('N')
	if in != "" {
		switch c := in[0]; {
		case c == '+' || c == '-':
			hint = 'S'
		case c >= '0' && c <= '9':
			hint = 'D'
		case strings.IndexByte("yYnNtTfFoO~", c) >= 0:
			hint = 'M'
		case c == '.':
			hint = '.'
		default:
			hint = 0
		}
	}
	if hint != 0 {
		if resolveMapHas([]byte(in)) {
			return false
		}
		switch hint {
		case 'M':
		case '.':
			if _, err := strconv.ParseFloat(in, 64); err == nil {
				return false
			}
		case 'D', 'S':
			if _, ok := parseTimestamp(in); ok {
				return false
			}
			plain := strings.Replace(in, "_", "", -1)
			if _, err := strconv.ParseInt(plain, 0, 64); err == nil {
				return false
			}
			if _, err := strconv.ParseUint(plain, 0, 64); err == nil {
				return false
			}
			if referenceYAMLStyleFloat.MatchString(plain) {
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
		}
	}
	return true
}
