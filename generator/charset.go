package generator

import "regexp"

// The driver's filters: each regexp matches what the driver deletes from a value.
var (
	// notLabelChars is what the driver's _label deletes from a label value.
	notLabelChars = regexp.MustCompile(`[^a-zA-Z0-9./ _-]`)
	// notCSVChars is what _get_label_csv deletes from each entry (":" survives for IPv6).
	notCSVChars = regexp.MustCompile(`[^a-zA-Z0-9./:-]`)
	// notOSDistroChars is what the driver deletes from the image's os_distro.
	notOSDistroChars = regexp.MustCompile(`[^a-zA-Z0-9./ -]`)
	// notNetworkDriverChars is what the driver deletes from the template's network_driver.
	notNetworkDriverChars = regexp.MustCompile(`[^a-zA-Z0-9._-]`)
	// notChartVersionChars is what the driver deletes from a chart version.
	notChartVersionChars = regexp.MustCompile(`[^a-z0-9.+-]`)
)

// The name checks (names.go).
var (
	// projectIDPattern is what a Keystone project (or user) id can be made of.
	projectIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	// dnsLabelPattern is a DNS-1123 label of any length.
	dnsLabelPattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)
	// nodeGroupNamePattern is the openstack-cluster chart's node group name.
	nodeGroupNamePattern = regexp.MustCompile(`^[a-z][a-z0-9-]+[a-z0-9]$`)
	// kubeVersionPattern is a Kubernetes version without its "v".
	kubeVersionPattern = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+$`)
)
