package generator

// Hand-written forms of the regexps every render runs (the name checks are in names.go).
// Each was a regexp over ASCII classes; run a few dozen times per render, the regexp
// machinery (backtracker, one-pass matcher, the copies of ReplaceAllString) was a tenth of
// BenchmarkRenderValues. The loops decide byte by byte, which is the same thing here: every
// class is ASCII, and a multi-byte rune or an invalid byte (which the regexps read as
// U+FFFD) consists of bytes >= 0x80, inside no class. charset_test.go holds each equal to
// its regexp over a table and by fuzzing.

// byteSet is a set of ASCII bytes.
type byteSet [256]bool

// newByteSet returns the set of the bytes in chars, where "a-z" stands for a range (a "-"
// first or last in chars is itself).
func newByteSet(chars string) *byteSet {
	var s byteSet
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

// The character classes of the driver's filters and of the name checks.
var (
	// labelChars is what the driver's _label keeps of a label value ([^a-zA-Z0-9.\-/ _]
	// is deleted).
	labelChars = newByteSet("a-zA-Z0-9./ _-")
	// csvChars is what _get_label_csv keeps of each entry (":" survives for IPv6).
	csvChars = newByteSet("a-zA-Z0-9./:-")
	// osDistroChars is what the driver keeps of the image's os_distro.
	osDistroChars = newByteSet("a-zA-Z0-9./ -")
	// networkDriverChars is what the driver keeps of the template's network_driver.
	networkDriverChars = newByteSet("a-zA-Z0-9._-")
	// chartVersionChars is what the driver keeps of a chart version.
	chartVersionChars = newByteSet("a-z0-9.+-")
	// projectIDChars is what a Keystone project (or user) id can be made of.
	projectIDChars = newByteSet("A-Za-z0-9_-")
	// lowerAlnum and dnsLabelChars make up DNS-1123 labels.
	lowerAlnum    = newByteSet("a-z0-9")
	dnsLabelChars = newByteSet("a-z0-9-")
	// labelValueChars and alnum make up Kubernetes label values.
	labelValueChars = newByteSet("A-Za-z0-9._-")
	alnum           = newByteSet("A-Za-z0-9")
)

// keepOnly deletes from s every byte outside keep: re.ReplaceAllString(s, "") for
// re = [^keep]. s itself is returned when nothing is deleted, which is the usual case, so
// that costs no allocation.
func keepOnly(s string, keep *byteSet) string {
	i := 0
	for i < len(s) && keep[s[i]] {
		i++
	}
	if i == len(s) {
		return s
	}
	b := []byte(s[:i])
	for ; i < len(s); i++ {
		if keep[s[i]] {
			b = append(b, s[i])
		}
	}
	return string(b)
}

// allIn reports whether every byte of s is in set.
func allIn(s string, set *byteSet) bool {
	for i := 0; i < len(s); i++ {
		if !set[s[i]] {
			return false
		}
	}
	return true
}

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
