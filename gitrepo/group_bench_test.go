package gitrepo_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/magnum-gitops/magnum-gitops/gitrepo"
)

// BenchmarkGroup compares committing and pushing 100 changes (3 files each, to different
// clusters) as one ApplyGroup — 100 commits, one push — with 100 Apply calls, against a
// local bare repository over file://. One op is 100 changes; compare ns/op and changes/s.
func BenchmarkGroup(b *testing.B) {
	for _, mode := range []string{"group", "apply-each"} {
		b.Run(mode, func(b *testing.B) {
			remote := bareRepo(b, b.TempDir()+"/bench.git")
			r, err := gitrepo.Open(context.Background(), testOptions("file://"+remote))
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				st := time.Now()
				round := int(benchSeq.Add(100))
				if mode == "group" {
					bs := make([]gitrepo.Planned, 100)
					for j := range bs {
						bs[j] = static(change("group "+strconv.Itoa(round+j), threeFileChange(round+j)))
					}
					res, err := applyGroup(ctx, r, bs)
					if err != nil {
						b.Fatal(err)
					}
					for _, g := range res {
						if g.Err != nil || g.NoOp {
							b.Fatalf("%+v", g)
						}
					}
				} else {
					for j := 0; j < 100; j++ {
						if res, err := r.Apply(ctx, change(fmt.Sprintf("apply %d", round+j), threeFileChange(round+j))); err != nil || res.NoOp {
							b.Fatalf("%+v %v", res, err)
						}
					}
				}
				b.ReportMetric(100/time.Since(st).Seconds(), "changes/s")
			}
		})
	}
}
