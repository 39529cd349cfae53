package gitrepo

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// PullRequest asks a forge to merge Head into Base.
type PullRequest struct {
	Head, Base  string
	Title, Body string
}

// PullRequester opens pull requests on a forge.
type PullRequester interface {
	// OpenPullRequest opens (or finds the open) pull request and returns its web URL.
	OpenPullRequest(ctx context.Context, pr PullRequest) (string, error)
}

// Gitea opens pull requests through the Gitea (and Forgejo) REST API v1.
type Gitea struct {
	// BaseURL is the server, e.g. https://gitea.example.org.
	BaseURL string
	// Owner and Repo name the repository.
	Owner, Repo string
	// Token is an access token with write access to the repository.
	Token string
	// Client defaults to http.DefaultClient.
	Client *http.Client
}

type giteaPull struct {
	Number  int    `json:"number"`
	HTMLURL string `json:"html_url"`
	Head    struct {
		Ref string `json:"ref"`
	} `json:"head"`
}

// OpenPullRequest implements PullRequester: POST /api/v1/repos/{owner}/{repo}/pulls. When a
// pull request for the branch is already open (409 or 422), it returns that one.
func (g *Gitea) OpenPullRequest(ctx context.Context, pr PullRequest) (string, error) {
	body, _ := json.Marshal(map[string]string{"head": pr.Head, "base": pr.Base, "title": pr.Title, "body": pr.Body})
	var created giteaPull
	status, err := g.do(ctx, http.MethodPost, g.path("pulls"), body, &created)
	switch {
	case err != nil:
		return "", err
	case status == http.StatusCreated:
		return created.HTMLURL, nil
	case status == http.StatusConflict || status == http.StatusUnprocessableEntity:
		var open []giteaPull
		if _, err := g.do(ctx, http.MethodGet, g.path("pulls")+"?state=open", nil, &open); err != nil {
			return "", err
		}
		for _, p := range open {
			if p.Head.Ref == pr.Head {
				return p.HTMLURL, nil
			}
		}
		return "", fmt.Errorf("gitea: pull request for %s refused (HTTP %d) and none is open", pr.Head, status)
	}
	return "", fmt.Errorf("gitea: creating the pull request: HTTP %d", status)
}

func (g *Gitea) path(rest string) string {
	return strings.TrimRight(g.BaseURL, "/") + "/api/v1/repos/" + url.PathEscape(g.Owner) + "/" + url.PathEscape(g.Repo) + "/" + rest
}

func (g *Gitea) do(ctx context.Context, method, u string, body []byte, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "token "+g.Token)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	c := g.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, fmt.Errorf("gitea: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		return resp.StatusCode, fmt.Errorf("%w: gitea answered HTTP %d", ErrAuthentication, resp.StatusCode)
	}
	if resp.StatusCode/100 == 2 && out != nil {
		if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(out); err != nil {
			return resp.StatusCode, fmt.Errorf("gitea: decoding the answer: %w", err)
		}
	}
	return resp.StatusCode, nil
}
