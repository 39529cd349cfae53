package main

import (
	"runtime/debug"
	"strings"
)

// settledFile is where serve keeps, inside git.cache_dir beside the clone, the clusters
// its gate knows to be as rendered (the reconciler's gate, Save).
const settledFile = "magnum-gitops-settled"

// buildID identifies the source this binary was built from, for the gate's settled
// clusters kept across restarts: a clean checkout's revision, or a released module
// version. A build from modified sources gets "" and keeps nothing: the same revision may
// render otherwise there.
func buildID() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	return buildIDOf(bi)
}

func buildIDOf(bi *debug.BuildInfo) string {
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	switch {
	case modified == "true" || strings.HasSuffix(bi.Main.Version, "+dirty"):
		return ""
	case rev != "":
		return bi.GoVersion + " " + rev
	case bi.Main.Version != "" && bi.Main.Version != "(devel)":
		return bi.GoVersion + " " + bi.Main.Path + "@" + bi.Main.Version
	}
	return ""
}
