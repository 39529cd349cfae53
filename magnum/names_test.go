package magnum

import (
	"testing"
)

func TestSanitizedName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"Prod_A", "prod-a"},
		{"--my..cluster--", "my-cluster"},
		{"Ünïcode Cluster", "n-code-cluster"},
		{"KELVIN\u212a", "kelvink"}, // U+212A lower-cases to ASCII k, as in Python
		{"a\xffb", "a-b"},
		{"___", ""},
		{"prod-a-2b7xq4mzkd5h", "prod-a-2b7xq4mzkd5h"}, // already sanitized
		{"a-_b", "a-b"},
		{"a--b", "a-b"},
		{"-a-", "a"},
		{"a-\xff", "a"},
	} {
		if got := SanitizedName(tc.in); got != tc.want {
			t.Errorf("SanitizedName(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
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

func TestNamespace(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"", "magnum-"},
		{"9f3c1b2a4d5e4f6a8b7c6d5e4f3a2b1c", "magnum-9f3c1b2a4d5e4f6a8b7c6d5e4f3a2b1c"},
		{"9F3C1B2A", "magnum-9f3c1b2a"},
		{"my_project-1", "magnum-myproject1"},
		{"Ünïcode", "magnum-ncode"},
		{"a\xffb", "magnum-ab"},
		{"KELVIN\u212a", "magnum-kelvink"}, // U+212A lower-cases to ASCII k, as in Python
		{"---", "magnum-"},
	} {
		if got := Namespace("magnum", tc.in); got != tc.want {
			t.Errorf("Namespace(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
