// Package service composes the long-running magnum-gitops service (`magnum-gitops serve`):
// the HTTP event API feeding the group-committing queue, the status read API, and the
// background loops that only one replica runs at a time — the second phase of deletes,
// health reporting to Magnum, and resync of the repository with the current generator.
package service
