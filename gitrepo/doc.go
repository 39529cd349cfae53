// Package gitrepo writes a set of files to a Git repository as one commit and pushes it,
// with go-git plumbing (no worktree scan), retries on non-fast-forward pushes, and a review
// mode that pushes to a branch. It knows nothing of Magnum.
package gitrepo
