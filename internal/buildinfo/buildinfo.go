// Package buildinfo holds the release this binary was built as: one version for the
// binary, the image, the chart and the driver shim. The Makefile stamps the variables
// below with -ldflags -X from the VERSION file and the checkout; a plain `go build`
// leaves them at their defaults and the Go build information fills what it can.
package buildinfo

// Set at link time (Makefile: LDFLAGS_VERSION). Strings, so -X can set them.
var (
	// Version is the semantic version of the release, without a leading "v".
	Version = "0.0.0-dev"
	// Commit is the Git commit the binary was built from.
	Commit = ""
	// Date is the commit's date (RFC 3339), so that the same commit builds the same bytes.
	Date = ""
)

// devVersion is Version when the linker did not stamp it.
const devVersion = "0.0.0-dev"
