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

// GitHub opens pull requests through the GitHub REST API v3 (github.com or GitHub
// Enterprise Server).
type GitHub struct {
	// BaseURL is the API root: https://api.github.com (the default) or, for GitHub
	// Enterprise Server, https://HOST/api/v3.
	BaseURL string
	// Owner and Repo name the repository; review branches are pushed to it, so a pull
	// request's head is Owner:branch.
	Owner, Repo string
	// Token is a token allowed to create pull requests, sent as a Bearer token.
	Token string
	// Client defaults to http.DefaultClient.
	Client *http.Client
}

var _ gitrepo.PullRequester = (*GitHub)(nil)

type githubPull struct {
	Number  int    `json:"number"`
	HTMLURL string `json:"html_url"`
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

func (g *GitHub) call(method, u string, body any) forgeCall {
	c := forgeCall{forge: "github", client: g.Client, method: method, url: u, headers: map[string]string{
		"Authorization":        "Bearer " + g.Token,
		"Accept":               "application/vnd.github+json",
		"X-GitHub-Api-Version": "2022-11-28",
	}}
	c.body = body
	return c
}

// path is the pulls endpoint of the repository, with rest appended.
func (g *GitHub) path(rest string) string {
	base := g.BaseURL
	if base == "" {
		base = "https://api.github.com"
	}
	return strings.TrimRight(base, "/") + "/repos/" + url.PathEscape(g.Owner) + "/" + url.PathEscape(g.Repo) + "/pulls" + rest
}
