package reconciler

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/magnum-gitops/magnum-gitops/generator"
)

// TestParseDeployedFromJSON: what is deployed reads the same from the object's JSON (the
// gate's memory of a file it wrote) as from the file's YAML, for a HelmRelease and an
// Argo CD Application.
func TestParseDeployedFromJSON(t *testing.T) {
	t.Parallel()
	ev := fixtureEvent(t, "01-prod-a-create.yaml")
	for _, format := range []string{generator.FormatFlux, generator.FormatArgo} {
		cfg := generator.DefaultConfig()
		cfg.Format = format
		res, err := generator.Render(ev, generator.MustSite(cfg))
		if err != nil {
			t.Fatal(err)
		}
		var obj any = res.Objects.HelmRelease
		if res.Objects.Application != nil {
			obj = res.Objects.Application.Object
		}
		j, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		b, err := generator.MarshalObject(obj)
		if err != nil {
			t.Fatal(err)
		}
		fromYAML, err := parseDeployed(b, nil)
		if err != nil {
			t.Fatal(err)
		}
		fromJSON, err := parseDeployed(b, j)
		if err != nil {
			t.Fatal(err)
		}
		if fromYAML.chartVersion == "" || len(fromYAML.values) == 0 {
			t.Fatalf("%s: nothing read from the YAML: %+v", format, fromYAML)
		}
		if diff := cmp.Diff(fromYAML, fromJSON, cmp.AllowUnexported(deployed{})); diff != "" {
			t.Errorf("%s: from the JSON against from the YAML (-want +got):\n%s", format, diff)
		}
	}
}
