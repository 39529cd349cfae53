package buildinfo

import (
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
)

// Info is what a build says of itself: `magnum-gitops version`, GET /version, serve's first
// log line and its build_info metric all show the same one. The JSON names follow a
// Kubernetes API server's /version (buildDate, goVersion, platform), so tools that read one
// read the other.
type Info struct {
	// Version is the release's semantic version, without a leading "v".
	Version string `json:"version"`
	// Commit is the Git commit built; empty when neither the linker nor Go recorded one.
	Commit string `json:"commit"`
	// TreeState is "dirty" when the checkout had changes that are not in Commit, "clean"
	// when Go recorded that it had none, empty when unknown.
	TreeState string `json:"treeState,omitempty"`
	// BuildDate is Commit's date (RFC 3339), so that one commit builds the same bytes.
	BuildDate string `json:"buildDate"`
	// GoVersion is the Go release that compiled the binary.
	GoVersion string `json:"goVersion"`
	// Platform is GOOS/GOARCH.
	Platform string `json:"platform"`
	// EventAPIVersions are the ClusterEvent apiVersions the service accepts; the driver
	// shim refuses a service that lacks the one it sends.
	EventAPIVersions []string `json:"eventAPIVersions"`
}

// Read returns this binary's Info: what the linker stamped, and for what it did not (a
// plain `go build` or `go install`), what Go recorded in the binary.
func Read() Info {
	bi, _ := debug.ReadBuildInfo()
	return from(Version, Commit, Date, bi)
}

// from combines the stamped values with Go's build information (nil when the binary has
// none); the stamped ones win.
func from(version, commit, date string, bi *debug.BuildInfo) Info {
	i := Info{Version: version, Commit: commit, BuildDate: date, GoVersion: runtime.Version(),
		Platform: runtime.GOOS + "/" + runtime.GOARCH, EventAPIVersions: []string{v1alpha1.APIVersion}}
	if bi == nil {
		return i
	}
	if bi.GoVersion != "" {
		i.GoVersion = bi.GoVersion
	}
	// `go install …@v0.2.0` records the module's version; a build in a checkout records a
	// pseudo-version; `go build` outside any records "(devel)".
	if i.Version == devVersion && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		i.Version = strings.TrimPrefix(bi.Main.Version, "v")
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			if i.Commit == "" {
				i.Commit = s.Value
			}
		case "vcs.time":
			if i.BuildDate == "" {
				i.BuildDate = s.Value
			}
		case "vcs.modified":
			// Only the source of the build knows whether its checkout was clean: the
			// stamped commit does not say.
			i.TreeState = map[string]string{"true": "dirty", "false": "clean"}[s.Value]
		}
	}
	return i
}
