package reconciler

import (
	"context"

	"github.com/magnum-gitops/magnum-gitops/generator"
)

// Publish brings every branch of the branch-per-namespace layout to what the main branch
// holds under cfg's roots (gitrepo.Repo.Publish); nothing in another layout. Pushes
// publish what they change; this carries what reached the main branch otherwise (a
// merged review, a switch from another layout) and costs one listing of the remote's refs
// when no branch is behind. The resync runs it first, so a resync that points the Flux
// objects at their branches commits them once the branches exist.
func (s *GitSink) Publish(ctx context.Context, cfg *generator.Site) error {
	if cfg.Flux.Layout != generator.LayoutBranchPerNamespace {
		return nil
	}
	var paths []string
	for _, root := range cfg.Roots() {
		files, err := s.Repo.ListFiles(root)
		if err != nil {
			return stepError("read", err)
		}
		paths = append(paths, files...)
	}
	return s.Repo.Publish(ctx, paths...)
}
