package forge

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/magnum-gitops/magnum-gitops/gitrepo"
)

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

var _ gitrepo.PullRequester = (*Gitea)(nil)

type giteaPull struct {
	Number  int    `json:"number"`
	HTMLURL string `json:"html_url"`
	Head    struct {
		Ref string `json:"ref"`
	} `json:"head"`
}

// OpenPullRequest implements gitrepo.PullRequester: POST /api/v1/repos/{owner}/{repo}/pulls. When a
// pull request for the branch is already open (409 or 422), it returns that one.
func (g *Gitea) OpenPullRequest(ctx context.Context, pr gitrepo.PullRequest) (string, error) {
	var created giteaPull
	status, _, err := g.call(http.MethodPost, g.path("pulls"),
		map[string]string{"head": pr.Head, "base": pr.Base, "title": pr.Title, "body": pr.Body}).do(ctx, &created)
	switch {
	case err != nil:
		return "", err
	case status == http.StatusCreated:
		return created.HTMLURL, nil
	case status == http.StatusConflict || status == http.StatusUnprocessableEntity:
		var open []giteaPull
		if _, _, err := g.call(http.MethodGet, g.path("pulls")+"?state=open", nil).do(ctx, &open); err != nil {
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

func (g *Gitea) call(method, u string, body any) forgeCall {
	c := forgeCall{forge: "gitea", client: g.Client, method: method, url: u,
		headers: map[string]string{"Authorization": "token " + g.Token, "Accept": "application/json"}}
	c.body = body
	return c
}

func (g *Gitea) path(rest string) string {
	return strings.TrimRight(g.BaseURL, "/") + "/api/v1/repos/" + url.PathEscape(g.Owner) + "/" + url.PathEscape(g.Repo) + "/" + rest
}
