package reconciler

import (
	"context"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
)

// Resolver fills what an event leaves out before it is rendered: the OpenStack facts of
// its "resolved" section, or Secret material the service holds. It must not overwrite what
// the event carries: the sender knows best (e.g. the driver shim resolves in the user's
// scope).
type Resolver interface {
	Resolve(ctx context.Context, ev *v1alpha1.ClusterEvent) error
}
