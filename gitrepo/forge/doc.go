// Package forge opens pull requests on the forges that host a repository (Gitea, GitHub),
// as gitrepo.PullRequesters for review mode: each speaks its REST API, sends its token
// only in headers and never quotes it, and finds the open pull request of a branch instead
// of opening a second.
package forge
