package forge

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/magnum-gitops/magnum-gitops/gitrepo"
)

// GitHub opens, follows and closes pull requests through the GitHub REST API v3
// (github.com or GitHub Enterprise Server). GitHub cannot run here: its tests use a fake
// built from GitHub's documented request and response shapes.
type GitHub struct {
	// BaseURL is the API root: https://api.github.com (the default) or, for GitHub
	// Enterprise Server, https://HOST/api/v3.
	BaseURL string
	// Owner and Repo name the repository; review branches are pushed to it, so a pull
	// request's head is Owner:branch.
	Owner, Repo string
	// Token is a token allowed to create pull requests, sent as a Bearer token.
	Token string
	// TokenFunc, when set, gives the token at each request instead of Token: a token
	// rotated where the caller reads it is used at once.
	TokenFunc func() string
	// Client defaults to http.DefaultClient.
	Client *http.Client
}

var (
	_ gitrepo.PullRequester      = (*GitHub)(nil)
	_ gitrepo.PullRequestTracker = (*GitHub)(nil)
)

type githubPull struct {
	Number  int    `json:"number"`
	HTMLURL string `json:"html_url"`
	State   string `json:"state"` // open or closed; merged ones are closed
	Merged  bool   `json:"merged"`
	// MergedBy and MergeCommitSHA mean something only when Merged: while a pull request is
	// open, GitHub's merge_commit_sha is the commit of its test merge.
	MergedBy       *forgeUser `json:"merged_by"`
	MergeCommitSHA *string    `json:"merge_commit_sha"`
	// Mergeable is null while GitHub computes it, false when the pull request conflicts
	// with its base.
	Mergeable *bool `json:"mergeable"`
	Head      struct {
		Ref string `json:"ref"`
	} `json:"head"`
}

// githubError is GitHub's error body: a message and, for 422, validation errors.
type githubError struct {
	Message string `json:"message"`
	Errors  []struct {
		Message string `json:"message"`
		Code    string `json:"code"`
	} `json:"errors"`
}

// OpenPullRequest implements gitrepo.PullRequester: POST /repos/{owner}/{repo}/pulls. When GitHub
// answers 422 "A pull request already exists", it returns the open one, found with
// GET /repos/{owner}/{repo}/pulls?head=owner:branch&state=open.
func (g *GitHub) OpenPullRequest(ctx context.Context, pr gitrepo.PullRequest) (string, error) {
	var created githubPull
	status, body, err := g.call(http.MethodPost, g.path(""),
		map[string]string{"head": pr.Head, "base": pr.Base, "title": pr.Title, "body": pr.Body}).do(ctx, &created)
	switch {
	case err != nil:
		return "", err
	case status == http.StatusCreated:
		return created.HTMLURL, nil
	case status == http.StatusUnprocessableEntity && alreadyExists(body):
		q := url.Values{"head": {g.Owner + ":" + pr.Head}, "state": {"open"}}
		var open []githubPull
		if _, body, err := g.call(http.MethodGet, g.path("?"+q.Encode()), nil).do(ctx, &open); err != nil || body != nil {
			if err == nil {
				err = fmt.Errorf("github: listing open pull requests: %s", githubMessage(body))
			}
			return "", err
		}
		if len(open) > 0 {
			return open[0].HTMLURL, nil
		}
		return "", fmt.Errorf("github: a pull request for %s exists but none is open", pr.Head)
	}
	return "", fmt.Errorf("github: creating the pull request: HTTP %d: %s", status, githubMessage(body))
}

func alreadyExists(body []byte) bool {
	var e githubError
	if json.Unmarshal(body, &e) != nil {
		return false
	}
	for _, v := range e.Errors {
		if strings.Contains(strings.ToLower(v.Message), "already exists") {
			return true
		}
	}
	return strings.Contains(strings.ToLower(e.Message), "already exists")
}

// githubMessage is the message of an error body, safe to put in an error.
func githubMessage(body []byte) string {
	var e githubError
	if json.Unmarshal(body, &e) != nil || e.Message == "" {
		return "no message"
	}
	msg := e.Message
	for _, v := range e.Errors {
		if v.Message != "" {
			msg += "; " + v.Message
		}
	}
	return gitrepo.Sanitize(msg)
}

// PullRequestStatus implements gitrepo.PullRequestTracker: GET /repos/{owner}/{repo}/pulls/{n},
// and for a pull request closed without merge, who closed it from the issue
// (GET /repos/{owner}/{repo}/issues/{n}, closed_by): the pull request names who merged,
// not who closed.
func (g *GitHub) PullRequestStatus(ctx context.Context, webURL string) (gitrepo.PullRequestStatus, error) {
	n, err := pullNumber(webURL, g.Owner, g.Repo, "pull")
	if err != nil {
		return gitrepo.PullRequestStatus{}, err
	}
	p, err := g.pull(ctx, n)
	if err != nil {
		return gitrepo.PullRequestStatus{}, err
	}
	st := gitrepo.PullRequestStatus{URL: p.HTMLURL, Number: n, State: gitrepo.PullRequestOpen, Head: p.Head.Ref,
		Unmergeable: p.State == "open" && p.Mergeable != nil && !*p.Mergeable}
	switch {
	case p.Merged:
		st.State = gitrepo.PullRequestMerged
		if p.MergedBy != nil {
			st.By = p.MergedBy.Login
		}
		if p.MergeCommitSHA != nil {
			st.MergeCommit = *p.MergeCommitSHA
		}
	case p.State == "closed":
		st.State = gitrepo.PullRequestClosed
		var issue struct {
			ClosedBy *forgeUser `json:"closed_by"`
		}
		if err := g.get(ctx, g.repoPath(fmt.Sprintf("issues/%d", n)), "reading the issue", &issue); err != nil {
			return gitrepo.PullRequestStatus{}, err
		}
		if issue.ClosedBy != nil {
			st.By = issue.ClosedBy.Login
		}
	}
	return st, nil
}

// pull reads pull request n.
func (g *GitHub) pull(ctx context.Context, n int) (githubPull, error) {
	var p githubPull
	status, body, err := g.call(http.MethodGet, g.path(fmt.Sprintf("/%d", n)), nil).do(ctx, &p)
	switch {
	case err != nil:
		return p, err
	case status == http.StatusNotFound:
		return p, fmt.Errorf("%w: github: %s/%s#%d", gitrepo.ErrPullRequestNotFound, g.Owner, g.Repo, n)
	case status/100 != 2:
		return p, fmt.Errorf("github: reading pull request %d: HTTP %d: %s", n, status, githubMessage(body))
	}
	return p, nil
}

// ClosePullRequest implements gitrepo.PullRequestTracker: POST
// /repos/{owner}/{repo}/issues/{n}/comments, then PATCH /repos/{owner}/{repo}/pulls/{n}
// {"state": "closed"}. A pull request that is no longer open, before or (a race with a
// reviewer) during the call, is left as it is.
func (g *GitHub) ClosePullRequest(ctx context.Context, webURL, comment string) error {
	n, err := pullNumber(webURL, g.Owner, g.Repo, "pull")
	if err != nil {
		return err
	}
	return closing{forge: "github", n: n,
		commentsURL: g.repoPath(fmt.Sprintf("issues/%d/comments", n)), pullURL: g.path(fmt.Sprintf("/%d", n)),
		open: func(ctx context.Context) (bool, error) {
			p, err := g.pull(ctx, n)
			return err == nil && p.State == "open", err
		},
		send: func(ctx context.Context, method, u string, body any) (int, string, error) {
			status, b, err := g.call(method, u, body).do(ctx, nil)
			return status, githubMessage(b), err
		}}.close(ctx, comment)
}

// get is a GET whose answer must be 2xx.
func (g *GitHub) get(ctx context.Context, u, what string, out any) error {
	status, body, err := g.call(http.MethodGet, u, nil).do(ctx, out)
	if err == nil && status/100 != 2 {
		err = fmt.Errorf("github: %s: HTTP %d: %s", what, status, githubMessage(body))
	}
	return err
}

func (g *GitHub) call(method, u string, body any) forgeCall {
	c := forgeCall{forge: "github", client: g.Client, method: method, url: u, headers: map[string]string{
		"Authorization":        "Bearer " + g.token(),
		"Accept":               "application/vnd.github+json",
		"X-GitHub-Api-Version": "2022-11-28",
	}}
	c.body = body
	return c
}

// path is the pulls endpoint of the repository, with rest appended.
func (g *GitHub) path(rest string) string { return g.repoPath("pulls") + rest }

// repoPath is an endpoint of the repository: /repos/{owner}/{repo}/rest.
func (g *GitHub) repoPath(rest string) string {
	base := g.BaseURL
	if base == "" {
		base = "https://api.github.com"
	}
	return strings.TrimRight(base, "/") + "/repos/" + url.PathEscape(g.Owner) + "/" + url.PathEscape(g.Repo) + "/" + rest
}

func (g *GitHub) token() string {
	if g.TokenFunc != nil {
		return g.TokenFunc()
	}
	return g.Token
}
