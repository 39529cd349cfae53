package migrate_test

import (
	"testing"

	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
	"github.com/magnum-gitops/magnum-gitops/reconciler/migrate"
)

// BenchmarkCompare is migrate's work per cluster once the release is read, beside
// rendering alone (the baseline, run side by side): "identical" is a cluster whose values
// are the release's (values compared, nothing rendered), "rollout" one whose values differ
// (the release's chart rendered with ours and its objects compared with the manifest).
func BenchmarkCompare(b *testing.B) {
	cfg := generator.DefaultConfig()
	ev := clusterEvent(b, adopted(nil, nil))
	live := testenv.DriverRelease(b, clusterEvent(b, nil))
	b.Run("render", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := generator.Render(ev, generator.MustSite(cfg)); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, tc := range []struct {
		name string
		want migrate.Verdict
	}{{"identical", migrate.Identical}, {"rollout", migrate.Differs}} {
		b.Run(tc.name, func(b *testing.B) {
			e := ev
			if tc.want == migrate.Differs {
				e = clusterEvent(b, adopted(map[string]string{"availability_zone": "az-1", "adopted_features": "placement"}, nil))
			}
			b.ReportAllocs()
			for b.Loop() {
				res, err := generator.Render(e, generator.MustSite(cfg))
				if err != nil {
					b.Fatal(err)
				}
				if rep := migrate.Compare(live, res); rep.Outcome != tc.want {
					b.Fatalf("outcome %s, want %s", rep.Outcome, tc.want)
				}
			}
		})
	}
}
