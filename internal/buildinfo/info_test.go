package buildinfo

import (
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
)

func TestFrom(t *testing.T) {
	vcs := func(rev, at, modified string) *debug.BuildInfo {
		return &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/magnum-gitops/magnum-gitops", Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev},
				{Key: "vcs.time", Value: at}, {Key: "vcs.modified", Value: modified}}}
	}
	installed := &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Path: "github.com/magnum-gitops/magnum-gitops", Version: "v0.2.1"}}
	platform := runtime.GOOS + "/" + runtime.GOARCH
	api := []string{v1alpha1.APIVersion}
	for _, tc := range []struct {
		name                  string
		version, commit, date string
		bi                    *debug.BuildInfo
		want                  Info
	}{
		{name: "make build: the stamped values win, Go says whether the tree was clean",
			version: "0.2.0", commit: "1f0d7522cb339160ec0ee028c2a3d2df13238985", date: "2026-11-28T09:12:48Z",
			bi: vcs("ffffffffffffffffffffffffffffffffffffffff", "2020-01-01T00:00:00Z", "false"),
			want: Info{Version: "0.2.0", Commit: "1f0d7522cb339160ec0ee028c2a3d2df13238985", TreeState: "clean",
				BuildDate: "2026-11-28T09:12:48Z", GoVersion: "go1.26.8", Platform: platform, EventAPIVersions: api}},
		{name: "go build in a modified checkout: revision and time from Go",
			version: devVersion, bi: vcs("1f0d7522cb339160ec0ee028c2a3d2df13238985", "2026-11-28T09:12:48Z", "true"),
			want: Info{Version: devVersion, Commit: "1f0d7522cb339160ec0ee028c2a3d2df13238985", TreeState: "dirty",
				BuildDate: "2026-11-28T09:12:48Z", GoVersion: "go1.26.8", Platform: platform, EventAPIVersions: api}},
		{name: "go install of a tagged module: its version without the v",
			version: devVersion, bi: installed,
			want: Info{Version: "0.2.1", GoVersion: "go1.26.1", Platform: platform, EventAPIVersions: api}},
		{name: "a stamped version is not replaced by the module's",
			version: "0.3.0-rc.1", bi: installed,
			want: Info{Version: "0.3.0-rc.1", GoVersion: "go1.26.1", Platform: platform, EventAPIVersions: api}},
		{name: "no build information: the running Go",
			version: devVersion,
			want:    Info{Version: devVersion, GoVersion: runtime.Version(), Platform: platform, EventAPIVersions: api}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, from(tc.version, tc.commit, tc.date, tc.bi)); diff != "" {
				t.Errorf("from() (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReadIsThisBinary: Read reports the variables the linker sets, and the Go that built
// this test.
func TestReadIsThisBinary(t *testing.T) {
	i := Read()
	if i.Version != Version || i.GoVersion != runtime.Version() || len(i.EventAPIVersions) != 1 {
		t.Errorf("Read() = %+v, want version %s, go %s and one event API", i, Version, runtime.Version())
	}
}
