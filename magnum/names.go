package magnum

import (
	"crypto/sha256"
	"encoding/base32"
	"regexp"
	"strings"
)

const (
	// MaxReleaseNameLen is Helm's limit on release names.
	MaxReleaseNameLen = 53
	// MaxNameLen is the Kubernetes limit on names and label values, which the chart
	// truncates its component names to.
	MaxNameLen = 63
)

// SanitizedName is magnum-capi-helm's sanitized_name: lower-case s (or "s-suffix"), replace
// each run of characters outside [a-z0-9] with one "-", and trim "-" at both ends. An empty
// s gives "".
func SanitizedName(s string, suffix ...string) string {
	if s == "" {
		return ""
	}
	if len(suffix) > 0 && suffix[0] != "" {
		s = s + "-" + suffix[0]
	}
	return strings.Trim(notLowerAlnum.ReplaceAllString(strings.ToLower(s), "-"), "-")
}

// notLowerAlnum is a run of what names do not keep.
var notLowerAlnum = regexp.MustCompile(`[^a-z0-9]+`)

// ResourceName is the driver's get_k8s_resource_name: the whole "R-x" re-sanitized. The
// driver names the Secrets it writes this way, so adopted Secrets keep their names.
func ResourceName(release, component string) string { return SanitizedName(release, component) }

// ChartComponentName is how the openstack-cluster chart names a component: "R-x" cut to 63
// characters with a trailing "-" trimmed. Status lookups must use this, not ResourceName:
// the driver's untruncated lookup never finds long MachineDeployment names.
func ChartComponentName(release, component string) string {
	n := release + "-" + component
	if len(n) > MaxNameLen {
		n = n[:MaxNameLen]
	}
	return strings.TrimRight(n, "-")
}

var shortIDEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// GenerateReleaseName derives a release name for a cluster that has no stack_id yet, in the
// driver's shape sanitized(name)[:30]-<12 chars of [a-z2-7]>. The driver draws the suffix at
// random; here it is the base32 of a SHA-256 of the cluster UUID, so rendering stays pure and
// a lost stack_id can be recomputed. Unlike the driver, a "-" left at the end of the 30-char
// cut is trimmed, so R never contains "--" (the driver's Secret and chart names would then
// disagree: docs/driver-rules.md, "Naming").
func GenerateReleaseName(clusterName, clusterUUID string) string {
	base := SanitizedName(clusterName)
	if len(base) > 30 {
		base = base[:30]
	}
	base = strings.TrimRight(base, "-")
	sum := sha256.Sum256([]byte(strings.ToLower(clusterUUID)))
	id := strings.ToLower(shortIDEncoding.EncodeToString(sum[:]))[:12]
	if base == "" {
		return id
	}
	return base + "-" + id
}

// Namespace is the driver's cluster_namespace: "<prefix>-" followed by the project id
// lower-cased with every character outside [a-z0-9] removed.
func Namespace(prefix, projectID string) string {
	return prefix + "-" + notLowerAlnum.ReplaceAllString(strings.ToLower(projectID), "")
}

// IsUUIDLike mirrors oslo.utils is_uuid_like: 32 hex digits once "urn:uuid:", braces and
// hyphens are removed, in any case.
//
// Every render asks this of several ids, so ASCII input, which real ids are, is checked in
// one pass without building the intermediate strings; anything else takes isUUIDLikeSlow,
// the plain transcription, whose Unicode case folding and space trimming decide there.
// TestIsUUIDLike and FuzzIsUUIDLike hold the two equal.
func IsUUIDLike(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return isUUIDLikeSlow(s)
		}
	}
	t := strings.TrimSpace(s)
	if len(t) >= len(urnUUID) && strings.EqualFold(t[:len(urnUUID)], urnUUID) {
		t = t[len(urnUUID):]
	}
	n := 0
	for i := 0; i < len(t); i++ {
		switch c := t[i]; {
		case c == '{' || c == '}' || c == '-':
		case '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F':
			n++
		default:
			return false
		}
	}
	return n == 32
}

// urnUUID is the prefix is_uuid_like strips (after lower-casing).
const urnUUID = "urn:uuid:"

// uuidPunct deletes what is_uuid_like ignores; built once, as building it costs more than
// using it.
var uuidPunct = strings.NewReplacer("{", "", "}", "", "-", "")

// isUUIDLikeSlow is IsUUIDLike for any string, step by step as oslo.utils does it.
func isUUIDLikeSlow(s string) bool {
	t := strings.ToLower(strings.TrimSpace(s))
	t = strings.TrimPrefix(t, urnUUID)
	t = uuidPunct.Replace(t)
	if len(t) != 32 {
		return false
	}
	for _, c := range t {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return false
		}
	}
	return true
}

// FluxObjectName names a project namespace's own GitRepository and Kustomization (in the
// Flux namespace) in the per-namespace repository layout: the namespace's name, unique and
// never reused. The generator writes them under this name, serve asks them to reconcile,
// and the status reader finds the revision they applied.
func FluxObjectName(namespace string) string { return namespace }

// PublishedBranchPrefix starts the name of every branch that publishes a directory of the
// main branch in the branch-per-namespace layout (generator.PublishedBranch); the main
// branch must not start with it.
const PublishedBranchPrefix = "magnum-gitops/"
