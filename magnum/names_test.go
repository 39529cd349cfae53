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
		{"prod-a-2b7xq4mzkd5h", "prod-a-2b7xq4mzkd5h"}, // already sanitized: returned as is
		{"a-_b", "a-b"},
		{"a--b", "a-b"},
		{"-a-", "a"},
		{"a-\xff", "a"},
	} {
		if got := SanitizedName(tc.in); got != tc.want || got != reference(tc.in) {
			t.Errorf("SanitizedName(%q) = %q, want %q (reference %q)", tc.in, got, tc.want, reference(tc.in))
		}
	}
}

// FuzzSanitizedName holds the loop byte for byte equal to the regexp it replaced.
func FuzzSanitizedName(f *testing.F) {
	for _, s := range []string{"prod-a", "Prod_A", "Ünïcode", "a\xffb", "İstanbul", "", "a-_b", "a--b", "-a-"} {
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

var uuidLikeCases = []string{
	"",
	"3e9b7c52-1d4a-4f8e-9b6c-2a7d5e8f1c03",
	"3E9B7C52-1D4A-4F8E-9B6C-2A7D5E8F1C03",
	"3e9b7c521d4a4f8e9b6c2a7d5e8f1c03",
	"{3e9b7c52-1d4a-4f8e-9b6c-2a7d5e8f1c03}",
	"urn:uuid:3e9b7c52-1d4a-4f8e-9b6c-2a7d5e8f1c03",
	"URN:UUID:3e9b7c52-1d4a-4f8e-9b6c-2a7d5e8f1c03",
	"{urn:uuid:3e9b7c52-1d4a-4f8e-9b6c-2a7d5e8f1c03}",
	" \t3e9b7c52-1d4a-4f8e-9b6c-2a7d5e8f1c03\n",
	"\u00a03e9b7c52-1d4a-4f8e-9b6c-2a7d5e8f1c03\u2003", // Unicode spaces are trimmed too
	"-3-e-9b7c521d4a4f8e9b6c2a7d5e8f1c03--",
	"3e9b7c52-1d4a-4f8e-9b6c-2a7d5e8f1c0",
	"3e9b7c52-1d4a-4f8e-9b6c-2a7d5e8f1c033",
	"3e9b7c52-1d4a-4f8e-9b6c-2a7d5e8f1c0g",
	"3e9b7c52 1d4a 4f8e 9b6c 2a7d5e8f1c03",
	"urn:uuid:",
	"urn:uu\u0130d:3e9b7c521d4a4f8e9b6c2a7d5e8f1c03", // İ lower-cases to i
	"3e9b7c521d4a4f8e9b6c2a7d5e8f1c0\u212a",          // Kelvin sign: k, not hex
	"3e9b7c521d4a4f8e9b6c2a7d5e8f1c0\xff",
	"public",
	"d1f02cfb-d27f-4068-9332-84d907cb0e2e",
}

func TestIsUUIDLike(t *testing.T) {
	t.Parallel()
	for _, s := range uuidLikeCases {
		if got, want := IsUUIDLike(s), isUUIDLikeSlow(s); got != want {
			t.Errorf("IsUUIDLike(%q) = %t, the reference gives %t", s, got, want)
		}
	}
	for s, want := range map[string]bool{"3e9b7c52-1d4a-4f8e-9b6c-2a7d5e8f1c03": true, "public": false} {
		if got := IsUUIDLike(s); got != want {
			t.Errorf("IsUUIDLike(%q) = %t, want %t", s, got, want)
		}
	}
}

// FuzzIsUUIDLike holds the one-pass check equal to isUUIDLikeSlow, the step-by-step
// transcription of oslo.utils' is_uuid_like.
func FuzzIsUUIDLike(f *testing.F) {
	for _, s := range uuidLikeCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := IsUUIDLike(s), isUUIDLikeSlow(s); got != want {
			t.Errorf("IsUUIDLike(%q) = %t, the reference gives %t", s, got, want)
		}
	})
}

// namespaceReference is Namespace with the regexp it was first written with.
func namespaceReference(prefix, projectID string) string {
	return prefix + "-" + regexp.MustCompile(`[^a-z0-9]`).ReplaceAllString(strings.ToLower(projectID), "")
}

var namespaceCases = []string{"", "9f3c1b2a4d5e4f6a8b7c6d5e4f3a2b1c", "9F3C1B2A", "my_project-1", "Ünïcode", "a\xffb", "KELVIN\u212a", "İstanbul", "---"}

func TestNamespace(t *testing.T) {
	t.Parallel()
	for _, s := range namespaceCases {
		if got, want := Namespace("magnum", s), namespaceReference("magnum", s); got != want {
			t.Errorf("Namespace(%q) = %q, the regexp gives %q", s, got, want)
		}
	}
}

// FuzzNamespace holds the loop byte for byte equal to the regexp it replaced.
func FuzzNamespace(f *testing.F) {
	for _, s := range namespaceCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := Namespace("magnum", s), namespaceReference("magnum", s); got != want {
			t.Errorf("Namespace(%q) = %q, the regexp gives %q", s, got, want)
		}
	})
}
