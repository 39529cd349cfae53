package byteset

import (
	"regexp"
	"testing"
)

// TestSet holds New's ranges, KeepOnly and All to the regexps they stand for, over every
// byte and every rune below 256 in a few positions.
func TestSet(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		chars, class string
	}{
		{"a-z0-9", `a-z0-9`},
		{"a-zA-Z0-9./ _-", `a-zA-Z0-9./ _\-`},
		{"-a", `\-a`},
		{"+/", `+/`},
	} {
		s := New(tc.chars)
		drop := regexp.MustCompile(`[^` + tc.class + `]`)
		all := regexp.MustCompile(`^[` + tc.class + `]*$`)
		for c := range 256 {
			for _, ch := range []string{string([]byte{byte(c)}), string(rune(c))} {
				for _, str := range []string{ch, ch + "ab", "a" + ch + "1", "1-" + ch} {
					if got, want := s.KeepOnly(str), drop.ReplaceAllString(str, ""); got != want {
						t.Fatalf("New(%q).KeepOnly(%q) = %q, the regexp gives %q", tc.chars, str, got, want)
					}
					if got, want := s.All(str), all.MatchString(str); got != want {
						t.Fatalf("New(%q).All(%q) = %t, the regexp gives %t", tc.chars, str, got, want)
					}
				}
			}
		}
	}
}
