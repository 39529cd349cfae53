package gitrepo

import "context"

// PullRequest asks a forge to merge Head into Base.
type PullRequest struct {
	Head, Base  string
	Title, Body string
}

// PullRequester opens pull requests on a forge; gitrepo/forge has Gitea and GitHub.
type PullRequester interface {
	// OpenPullRequest opens (or finds the open) pull request and returns its web URL.
	OpenPullRequest(ctx context.Context, pr PullRequest) (string, error)
}
