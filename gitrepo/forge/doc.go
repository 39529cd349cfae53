// Package forge speaks to the forges that host a repository (Gitea and Forgejo, GitHub)
// for review mode: it opens pull requests (gitrepo.PullRequester), reads whether they are
// open, merged or closed and by whom, and closes superseded ones with a comment
// (gitrepo.PullRequestTracker), and verifies and reads their pull_request webhooks
// (ParseGiteaWebhook, ParseGitHubWebhook). Each client speaks its REST API, sends its
// token only in headers and never quotes it, and finds the open pull request of a branch
// instead of opening a second. The Gitea client is tested against a real Gitea
// (internal/testenv/gitea); GitHub's against a fake of its documented shapes.
package forge
