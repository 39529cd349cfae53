// Package byteset filters and checks strings byte by byte against a set of ASCII bytes:
// the hand-written form of the character-class regexps ([^a-z0-9] and the like) that
// naming and the driver's label filters run on every render, where the regexp machinery
// was a tenth of the time. A class of ASCII bytes decides byte by byte what the regexp
// decides rune by rune: a multi-byte rune, or an invalid byte (which a regexp reads as
// U+FFFD), is made of bytes >= 0x80, inside no class.
package byteset

// Set is a set of bytes; index it with a byte to ask whether it is in.
type Set [256]bool

// New returns the set of the bytes in chars, where "a-z" stands for a range (a "-" first
// or last in chars is itself).
func New(chars string) *Set {
	var s Set
	for i := 0; i < len(chars); i++ {
		if i+2 < len(chars) && chars[i+1] == '-' {
			for c := chars[i]; c <= chars[i+2]; c++ {
				s[c] = true
			}
			i += 2
			continue
		}
		s[chars[i]] = true
	}
	return &s
}

// KeepOnly deletes from str every byte outside s: re.ReplaceAllString(str, "") for
// re = [^s]. str itself is returned when nothing is deleted, the usual case, which costs
// no allocation.
func (s *Set) KeepOnly(str string) string {
	i := 0
	for i < len(str) && s[str[i]] {
		i++
	}
	if i == len(str) {
		return str
	}
	b := []byte(str[:i])
	for ; i < len(str); i++ {
		if s[str[i]] {
			b = append(b, str[i])
		}
	}
	return string(b)
}

// All reports whether every byte of str is in s.
func (s *Set) All(str string) bool {
	for i := 0; i < len(str); i++ {
		if !s[str[i]] {
			return false
		}
	}
	return true
}
