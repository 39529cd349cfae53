package generator

import "github.com/magnum-gitops/magnum-gitops/internal/byteset"

// Hand-written forms of the regexps every render runs (the name checks are in names.go),
// as sets of internal/byteset: run a few dozen times per render, the regexp machinery
// (backtracker, one-pass matcher, the copies of ReplaceAllString) costs a tenth of
// BenchmarkRenderValues. Kept, with pemcheck.go and valuesjson.go, because the full
// render misses its 200 µs target with the library in their place (docs/benchmarks.md).
// charset_test.go holds each equal to its regexp over a table and by fuzzing.

// The character classes of the driver's filters and of the name checks.
var (
	// labelChars is what the driver's _label keeps of a label value ([^a-zA-Z0-9.\-/ _]
	// is deleted).
	labelChars = byteset.New("a-zA-Z0-9./ _-")
	// csvChars is what _get_label_csv keeps of each entry (":" survives for IPv6).
	csvChars = byteset.New("a-zA-Z0-9./:-")
	// osDistroChars is what the driver keeps of the image's os_distro.
	osDistroChars = byteset.New("a-zA-Z0-9./ -")
	// networkDriverChars is what the driver keeps of the template's network_driver.
	networkDriverChars = byteset.New("a-zA-Z0-9._-")
	// chartVersionChars is what the driver keeps of a chart version.
	chartVersionChars = byteset.New("a-z0-9.+-")
	// projectIDChars is what a Keystone project (or user) id can be made of.
	projectIDChars = byteset.New("A-Za-z0-9_-")
	// lowerAlnum and dnsLabelChars make up DNS-1123 labels.
	lowerAlnum    = byteset.New("a-z0-9")
	dnsLabelChars = byteset.New("a-z0-9-")
	// labelValueChars and alnum make up Kubernetes label values.
	labelValueChars = byteset.New("A-Za-z0-9._-")
	alnum           = byteset.New("A-Za-z0-9")
)

// isKubeVersion is ^[0-9]+\.[0-9]+\.[0-9]+$: three dot-separated runs of digits.
func isKubeVersion(s string) bool {
	for part := range 3 {
		n := 0
		for n < len(s) && '0' <= s[n] && s[n] <= '9' {
			n++
		}
		if n == 0 {
			return false
		}
		s = s[n:]
		if part < 2 {
			if s == "" || s[0] != '.' {
				return false
			}
			s = s[1:]
		}
	}
	return s == ""
}
