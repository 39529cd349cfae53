package generator

import "regexp"

var (
	// releaseNameRE is a DNS-1123 label: the form every object named after R must have.
	releaseNameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	// nodeGroupNameRE is the openstack-cluster chart's own check (chart >= 0.15).
	nodeGroupNameRE = regexp.MustCompile(`^[a-z][a-z0-9-]+[a-z0-9]$`)
)
