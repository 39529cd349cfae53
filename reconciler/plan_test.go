package reconciler_test

import (
	"context"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/reconciler"
)

// BenchmarkPlanUnchanged plans a cluster against a tree that already holds it, Secrets
// encrypted with SOPS: every cluster of a resync, and most of a scale event's. "gate" is
// the service's pipeline, "serialise" the same without its Gate (every object serialised
// and every Secret file read again).
func BenchmarkPlanUnchanged(b *testing.B) {
	ctx := context.Background()
	ev := event(b, "01-prod-a-create.yaml")
	cfg := generator.DefaultConfig()
	for _, gated := range []bool{true, false} {
		name := map[bool]string{true: "gate", false: "serialise"}[gated]
		b.Run(name, func(b *testing.B) {
			p := &reconciler.Pipeline{Config: &cfg, Secrets: encrypting(b), Gate: &reconciler.Gate{}}
			_, _, tree := written(b, p, ev)
			if !gated {
				p.Gate = nil
			}
			b.ReportAllocs()
			for b.Loop() {
				res, err := p.Render(ctx, ev)
				if err != nil {
					b.Fatal(err)
				}
				pl, err := p.Plan(ev, res, tree)
				if err != nil || !pl.NoOp() {
					b.Fatalf("plan of an unchanged cluster: %v, %v", pl.Paths(), err)
				}
			}
		})
	}
}
