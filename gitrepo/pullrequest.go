package gitrepo

import (
	"context"
	"errors"
)

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

// PullRequestState is where a pull request stands: what review mode reports to Magnum
// while a change waits (open), once it reached the base (merged), or was refused (closed).
type PullRequestState string

// The states of a pull request.
const (
	// PullRequestOpen: waiting for review.
	PullRequestOpen PullRequestState = "open"
	// PullRequestMerged: merged into its base, whatever the merge style.
	PullRequestMerged PullRequestState = "merged"
	// PullRequestClosed: closed without being merged; nothing of it reached the base.
	PullRequestClosed PullRequestState = "closed"
)

// PullRequestStatus is what a forge says of one pull request.
type PullRequestStatus struct {
	// URL is the pull request's web URL, as OpenPullRequest returned it.
	URL string
	// Number is the pull request's number in its repository.
	Number int
	// State is open, merged or closed (without merge).
	State PullRequestState
	// By is the login of who merged or closed it; "" while it is open, or when the forge
	// does not say who closed it.
	By string
	// MergeCommit is the commit the merge put on the base: a merge commit, the squashed
	// commit, or the rebased head. It differs from the commit pushed to the review branch
	// for squash and rebase merges. "" unless merged.
	MergeCommit string
	// Head is the pull request's head branch.
	Head string
	// Unmergeable is set while an open pull request cannot be merged as it stands, as the
	// forge says: a conflict with its base (the usual cause), a check still running, or a
	// draft. Forges compute it lazily, so a moment's value may be stale.
	Unmergeable bool
}

// PullRequestTracker follows and closes the pull requests a PullRequester opened;
// gitrepo/forge's Gitea and GitHub implement both.
type PullRequestTracker interface {
	// PullRequestStatus reads the state of the pull request at url.
	PullRequestStatus(ctx context.Context, url string) (PullRequestStatus, error)
	// ClosePullRequest comments on the pull request at url, then closes it without
	// merging. A pull request already closed or merged is left as it is, without error.
	ClosePullRequest(ctx context.Context, url, comment string) error
}

var (
	// ErrPullRequestNotFound means the forge has no such pull request (HTTP 404), or the token
	// may not see it.
	ErrPullRequestNotFound = errors.New("gitrepo: pull request not found")
	// ErrNotPullRequestURL means the URL is not the web URL of a pull request of the
	// repository the client is configured for. Retrying cannot help.
	ErrNotPullRequestURL = errors.New("gitrepo: not a pull request URL of this repository")
)
