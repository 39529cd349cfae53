package reconciler

import (
	"context"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/reconciler/internal/gate"
)

// Pipeline runs the steps of one event up to the repository change: decode, resolve,
// render, encode Secrets, and diff against what a gitrepo.Tree holds. Its only state
// between events is the Gate's memory of what it serialised, so one Pipeline serves
// concurrent callers.
type Pipeline struct {
	// Config is the site's configuration, validated where it was loaded.
	Config *generator.Site
	// Resolvers fill what events leave out, in order.
	Resolvers []Resolver
	// Secrets decides how Secrets reach the repository.
	Secrets SecretPolicy
	// Gate, when set, spares plans serialising what the repository already holds; the
	// service sets it, a one-shot command need not.
	Gate *gate.Gate
}

// Decode is the first step: a ClusterEvent document (YAML or JSON) into an event.
func Decode(data []byte) (*v1alpha1.ClusterEvent, error) {
	ev, err := v1alpha1.DecodeEvent(data)
	return ev, stepError("decode", err)
}

// Render runs the resolve and render steps. The event may be completed by the resolvers;
// the result keeps the digest of the event as it came, which is what a retry carries.
func (p *Pipeline) Render(ctx context.Context, ev *v1alpha1.ClusterEvent) (*generator.Result, error) {
	var digest string
	if ev.ID != "" {
		digest = eventDigest(ev)
	}
	res, err := p.render(ctx, ev)
	if err != nil {
		return nil, err
	}
	res.EventDigest = digest
	return res, nil
}

// render is Render without the event's digest, for a render no retry will ask about
// (a resync's: its commits carry no event).
func (p *Pipeline) render(ctx context.Context, ev *v1alpha1.ClusterEvent) (*generator.Result, error) {
	for _, r := range p.Resolvers {
		if err := r.Resolve(ctx, ev); err != nil {
			return nil, stepError("resolve", err)
		}
	}
	res, err := generator.Render(ev, p.Config)
	return res, stepError("render", err)
}
