package main

import (
	"runtime/debug"
	"testing"
)

// TestBuildID: a build is identified by a clean checkout's revision or a released
// version, and a build from modified sources not at all.
func TestBuildID(t *testing.T) {
	t.Parallel()
	vcs := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	for _, tc := range []struct {
		name     string
		version  string
		settings []debug.BuildSetting
		want     string
	}{
		{"a clean checkout", "(devel)", vcs("26af939", "false"), "go1.26.0 26af939"},
		{"modified sources", "(devel)", vcs("26af939", "true"), ""},
		{"a released version", "v1.2.0", nil, "go1.26.0 github.com/magnum-gitops/magnum-gitops@v1.2.0"},
		{"a tagged checkout, modified", "v1.2.0+dirty", vcs("26af939", "true"), ""},
		{"no version, no VCS", "(devel)", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bi := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/magnum-gitops/magnum-gitops", Version: tc.version}, Settings: tc.settings}
			if got := buildIDOf(bi); got != tc.want {
				t.Errorf("buildIDOf = %q, want %q", got, tc.want)
			}
		})
	}
}
