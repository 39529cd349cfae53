package magnum

import (
	"regexp"
	"strings"
	"testing"
)

// reference is sanitized_name as the driver writes it, with the regexp.
func reference(s string) string {
	return strings.Trim(regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.ToLower(s), "-"), "-")
}

func TestSanitizedName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"Prod_A", "prod-a"},
		{"--my..cluster--", "my-cluster"},
		{"Ünïcode Cluster", "n-code-cluster"},
		{"KELVIN\u212a", "kelvink"}, // U+212A lower-cases to ASCII k, as in Python
		{"a\xffb", "a-b"},
		{"___", ""},
	} {
		if got := SanitizedName(tc.in); got != tc.want || got != reference(tc.in) {
			t.Errorf("SanitizedName(%q) = %q, want %q (reference %q)", tc.in, got, tc.want, reference(tc.in))
		}
	}
}

// FuzzSanitizedName holds the loop byte for byte equal to the regexp it replaced.
func FuzzSanitizedName(f *testing.F) {
	for _, s := range []string{"prod-a", "Prod_A", "Ünïcode", "a\xffb", "İstanbul", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if s == "" {
			return
		}
		if got, want := SanitizedName(s), reference(s); got != want {
			t.Errorf("SanitizedName(%q) = %q, the regexp gives %q", s, got, want)
		}
	})
}
