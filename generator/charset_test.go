package generator

import (
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/magnum-gitops/magnum-gitops/internal/byteset"
)

// The regexps the hand-written checks of charset.go and names.go replaced, as they were.
var (
	filterREs = []struct {
		name string
		re   *regexp.Regexp
		keep *byteset.Set
	}{
		{"label", regexp.MustCompile(`[^a-zA-Z0-9.\-/ _]`), labelChars},
		{"csv", regexp.MustCompile(`[^a-zA-Z0-9.\-/:]`), csvChars},
		{"osDistro", regexp.MustCompile(`[^a-zA-Z0-9.\-/ ]`), osDistroChars},
		{"networkDriver", regexp.MustCompile(`[^a-zA-Z0-9.\-_]`), networkDriverChars},
		{"chartVersion", regexp.MustCompile(`[^a-z0-9.\-+]`), chartVersionChars},
	}
	matchREs = []struct {
		name  string
		re    *regexp.Regexp
		check func(string) bool
	}{
		{"projectID", regexp.MustCompile(`^[A-Za-z0-9_-]+$`), isProjectID},
		{"releaseName", regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`), isDNSLabelForm},
		{"nodeGroupName", regexp.MustCompile(`^[a-z][a-z0-9-]+[a-z0-9]$`), isNodeGroupName},
		{"kubeVersion", regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+$`), isKubeVersion},
	}
)

var charsetCases = []string{
	"", "a", "-", "_", ".", "ab", "a-", "-a", "abc", "a-b", "a--b", "a-B", "ab-", "1ab", "ab1",
	"prod-a-2b7xq4mzkd5h", "9f3c1b2a4d5e4f6a8b7c6d5e4f3a2b1c", "my_project", "Prod_A",
	"1.33.7", "v1.33.7", "1.33", "1.33.7.1", "1..7", ".1.2", "1.2.", "1.28.3+k3s1", "01.002.0003",
	"1.2.3\n", "\n1.2.3", "0.27.0", "v0.27.0-rc.1+build", "calico", "cilium ", "flannel\t",
	"ubuntu", "fedora-coreos/38", "https://a:b", "10.0.0.0/24", "fd00::/64", "a b_c.d-e/f:g+h",
	"Ünïcode", "a\xffb", "\xff", "KELVIN\u212a", "日本", "a\x00b", "a\nb", `a"b'c\d`, "{{x}}",
	"default-worker", "control-plane", "x1", "a.b", "A",
}

func checkFilters(t *testing.T, s string) {
	t.Helper()
	for _, f := range filterREs {
		if got, want := f.keep.KeepOnly(s), f.re.ReplaceAllString(s, ""); got != want {
			t.Errorf("%s: KeepOnly(%q) = %q, the regexp gives %q", f.name, s, got, want)
		}
	}
	for _, m := range matchREs {
		if got, want := m.check(s), m.re.MatchString(s); got != want {
			t.Errorf("%s(%q) = %t, the regexp gives %t", m.name, s, got, want)
		}
	}
	if got, want := isLabelValueForm(s), len(validation.IsValidLabelValue(s)) == 0; got != want {
		t.Errorf("isLabelValueForm(%q) = %t, validation.IsValidLabelValue says %t", s, got, want)
	}
	if got, want := isDNSLabel(s), len(validation.IsDNS1123Label(s)) == 0; got != want {
		t.Errorf("isDNSLabel(%q) = %t, validation.IsDNS1123Label says %t", s, got, want)
	}
}

func TestCharsetsMatchRegexps(t *testing.T) {
	t.Parallel()
	// Every byte and every rune below 256, alone, first, in the middle and last.
	for c := range 256 {
		for _, ch := range []string{string([]byte{byte(c)}), string(rune(c))} {
			for _, s := range []string{ch, ch + "ab", "a" + ch + "1", "1.2" + ch} {
				checkFilters(t, s)
			}
		}
	}
	for _, s := range charsetCases {
		checkFilters(t, s)
	}
	// Label values and DNS labels of 63 characters pass, of 64 do not.
	checkFilters(t, strings.Repeat("a", 63))
	checkFilters(t, strings.Repeat("a", 64))
}

// FuzzCharsets holds the hand-written filters and checks equal to the regexps (and to the
// validation package) they replaced.
//
//	go test ./generator -run '^$' -fuzz FuzzCharsets -fuzztime 30s
func FuzzCharsets(f *testing.F) {
	for _, s := range charsetCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkFilters(t, s) })
}

// BenchmarkCharsets runs every filter and check of charset.go over charsetCases, as
// written and as the regexps they replaced, side by side (run BenchmarkRenderValues in the
// same session to weigh the difference against a render).
func BenchmarkCharsets(b *testing.B) {
	b.Run("byteset", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, s := range charsetCases {
				for _, f := range filterREs {
					_ = f.keep.KeepOnly(s)
				}
				for _, m := range matchREs {
					_ = m.check(s)
				}
			}
		}
	})
	b.Run("regexp", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, s := range charsetCases {
				for _, f := range filterREs {
					_ = f.re.ReplaceAllString(s, "")
				}
				for _, m := range matchREs {
					_ = m.re.MatchString(s)
				}
			}
		}
	})
}
