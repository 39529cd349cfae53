package generator

// The checks of the names and ids a render writes into object names and label values, by
// hand instead of by regexp (see charset.go); the regexps they stand for are in their doc
// comments and in charset_test.go, which holds them equal.

// isProjectID is ^[A-Za-z0-9_-]+$: what a Keystone project id can be made of. The driver
// silently deletes everything else when it builds the namespace; refusing instead keeps two
// odd ids from sharing one namespace.
func isProjectID(s string) bool { return s != "" && projectIDChars.All(s) }

// isDNSLabelForm is ^[a-z0-9]([-a-z0-9]*[a-z0-9])?$, a DNS-1123 label without its length
// limit: the form every object named after R must have.
func isDNSLabelForm(s string) bool {
	return s != "" && lowerAlnum[s[0]] && lowerAlnum[s[len(s)-1]] && dnsLabelChars.All(s)
}

// isDNSLabel reports whether validation.IsDNS1123Label accepts s: isDNSLabelForm, at most
// 63 characters. Callers ask validation.IsDNS1123Label for its messages only when this
// says no.
func isDNSLabel(s string) bool { return len(s) <= 63 && isDNSLabelForm(s) }

// isNodeGroupName is ^[a-z][a-z0-9-]+[a-z0-9]$, the openstack-cluster chart's own check of
// node group names (chart >= 0.15): at least 3 characters.
func isNodeGroupName(s string) bool {
	return len(s) >= 3 && 'a' <= s[0] && s[0] <= 'z' && lowerAlnum[s[len(s)-1]] && dnsLabelChars.All(s)
}

// isLabelValueForm reports whether validation.IsValidLabelValue accepts s: at most 63
// characters of [-A-Za-z0-9_.], beginning and ending with [A-Za-z0-9], or empty. Callers
// ask validation.IsValidLabelValue for its messages only when this says no.
func isLabelValueForm(s string) bool {
	if s == "" {
		return true
	}
	return len(s) <= 63 && alnum[s[0]] && alnum[s[len(s)-1]] && labelValueChars.All(s)
}
