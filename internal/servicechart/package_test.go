package servicechart

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart/loader"
)

// TestPackageReproducible: two packages of one commit are the same bytes, whatever the
// time they are made at, and carry the version given as version and appVersion.
func TestPackageReproducible(t *testing.T) {
	t.Parallel()
	date := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	var pkgs [][]byte
	for i := range 2 {
		if i == 1 {
			time.Sleep(1100 * time.Millisecond) // Helm stamps the time of packaging, to the second
		}
		p, err := Package(root, "1.2.3-rc.1", date, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Base(p) != "magnum-gitops-1.2.3-rc.1.tgz" {
			t.Errorf("package %s", p)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, b)
		ch, err := loader.LoadArchive(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if ch.Metadata.Version != "1.2.3-rc.1" || ch.Metadata.AppVersion != "1.2.3-rc.1" {
			t.Errorf("packaged version %q, appVersion %q", ch.Metadata.Version, ch.Metadata.AppVersion)
		}
		if ch.Schema == nil || len(ch.Templates) == 0 {
			t.Error("the package lacks the schema or the templates")
		}
	}
	if !bytes.Equal(pkgs[0], pkgs[1]) {
		t.Error("two packages of the same chart differ")
	}
}
