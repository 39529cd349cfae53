package generator

import (
	"testing"

	"github.com/Masterminds/semver/v3"
)

// TestParseVersion holds the cached parse equal to semver.NewVersion, errors included, on
// the first call and on the next.
func TestParseVersion(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"0.27.0", "v0.20.0", "0.20", "1", "0.27.0-rc.1+build.5", "01.2.3", "", "x", "1.2.3.4", "0.11.0"} {
		want, wantErr := semver.NewVersion(v)
		for range 2 {
			got, err := parseVersion(v)
			if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
				t.Fatalf("parseVersion(%q) error %v, semver gives %v", v, err, wantErr)
			}
			if err == nil && (got.String() != want.String() || got.Original() != want.Original() || !got.Equal(want)) {
				t.Errorf("parseVersion(%q) = %s, semver gives %s", v, got, want)
			}
		}
	}
}
