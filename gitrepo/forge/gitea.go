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

// Gitea opens, follows and closes pull requests through the Gitea (and Forgejo) REST API
// v1. Tested against a real Gitea v1.26 (internal/testenv/gitea).
type Gitea struct {
	// BaseURL is the server, e.g. https://gitea.example.org.
	BaseURL string
	// Owner and Repo name the repository.
	Owner, Repo string
	// Token is an access token with write access to the repository.
	Token string
	// TokenFunc, when set, gives the token at each request instead of Token: a token
	// rotated where the caller reads it is used at once.
	TokenFunc func() string
	// Client defaults to http.DefaultClient.
	Client *http.Client
}

var (
	_ gitrepo.PullRequester      = (*Gitea)(nil)
	_ gitrepo.PullRequestTracker = (*Gitea)(nil)
)

// giteaPageSize is the most items Gitea returns in one page (its API.MAX_RESPONSE_ITEMS
// default); listings are read page by page, up to giteaMaxPages pages.
const (
	giteaPageSize = 50
	giteaMaxPages = 100
)

// forgeUser is a user as both forges' APIs and webhooks give it.
type forgeUser struct {
	Login string `json:"login"`
}

type giteaPull struct {
	Number         int        `json:"number"`
	HTMLURL        string     `json:"html_url"`
	State          string     `json:"state"` // open or closed; merged ones are closed
	Merged         bool       `json:"merged"`
	MergedBy       *forgeUser `json:"merged_by"`
	MergeCommitSHA *string    `json:"merge_commit_sha"`
	// Mergeable is false while Gitea checks the pull request, when it conflicts with its
	// base, or is a work in progress.
	Mergeable bool `json:"mergeable"`
	Head      struct {
		Ref string `json:"ref"`
	} `json:"head"`
}

// OpenPullRequest implements gitrepo.PullRequester: POST /api/v1/repos/{owner}/{repo}/pulls. When a
// pull request for the branch is already open (409 or 422), it returns that one. A
// repository that does not exist, or that the token may not see, is
// gitrepo.ErrRepositoryNotFound.
func (g *Gitea) OpenPullRequest(ctx context.Context, pr gitrepo.PullRequest) (string, error) {
	var created giteaPull
	status, body, err := g.call(http.MethodPost, g.path("pulls"),
		map[string]string{"head": pr.Head, "base": pr.Base, "title": pr.Title, "body": pr.Body}).do(ctx, &created)
	switch {
	case err != nil:
		return "", err
	case status == http.StatusCreated:
		return created.HTMLURL, nil
	case status == http.StatusConflict || status == http.StatusUnprocessableEntity:
		if u, err := g.openPullOf(ctx, pr.Head); err != nil || u != "" {
			return u, err
		}
		return "", fmt.Errorf("gitea: pull request for %s refused (HTTP %d: %s) and none is open", pr.Head, status, giteaMessage(body))
	case status == http.StatusNotFound:
		if err := g.repoExists(ctx); err != nil {
			return "", err
		}
	}
	return "", fmt.Errorf("gitea: creating the pull request: HTTP %d: %s", status, giteaMessage(body))
}

// openPullOf is the URL of the open pull request whose head is branch, "" when none is.
func (g *Gitea) openPullOf(ctx context.Context, branch string) (string, error) {
	for page := 1; page <= giteaMaxPages; page++ {
		var open []giteaPull
		q := fmt.Sprintf("pulls?state=open&limit=%d&page=%d", giteaPageSize, page)
		if err := g.get(ctx, g.path(q), "listing open pull requests", &open); err != nil {
			return "", err
		}
		for _, p := range open {
			if p.Head.Ref == branch {
				return p.HTMLURL, nil
			}
		}
		if len(open) < giteaPageSize { // the last page: Gitea filters nothing out of this listing
			break
		}
	}
	return "", nil
}

// repoExists tells a missing repository (gitrepo.ErrRepositoryNotFound) from another 404.
func (g *Gitea) repoExists(ctx context.Context) error {
	status, body, err := g.call(http.MethodGet, strings.TrimSuffix(g.path(""), "/"), nil).do(ctx, nil)
	switch {
	case err != nil:
		return err
	case status == http.StatusNotFound:
		return fmt.Errorf("%w: gitea: %s/%s at %s (or the token may not see it)", gitrepo.ErrRepositoryNotFound, g.Owner, g.Repo, g.BaseURL)
	case status/100 != 2:
		return fmt.Errorf("gitea: reading the repository: HTTP %d: %s", status, giteaMessage(body))
	}
	return nil
}

// PullRequestStatus implements gitrepo.PullRequestTracker: GET .../pulls/{n}, and for a
// pull request closed without merge, who closed it from the issue timeline
// (GET .../issues/{n}/timeline, the last event of type "close"): Gitea's pull request
// object names who merged, not who closed.
func (g *Gitea) PullRequestStatus(ctx context.Context, webURL string) (gitrepo.PullRequestStatus, error) {
	n, err := pullNumber(webURL, g.Owner, g.Repo, "pulls")
	if err != nil {
		return gitrepo.PullRequestStatus{}, err
	}
	p, err := g.pull(ctx, n)
	if err != nil {
		return gitrepo.PullRequestStatus{}, err
	}
	st := gitrepo.PullRequestStatus{URL: p.HTMLURL, Number: n, State: gitrepo.PullRequestOpen, Head: p.Head.Ref,
		Unmergeable: p.State == "open" && !p.Mergeable}
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
		if st.By, err = g.closer(ctx, n); err != nil {
			return gitrepo.PullRequestStatus{}, err
		}
	}
	return st, nil
}

// pull reads pull request n.
func (g *Gitea) pull(ctx context.Context, n int) (giteaPull, error) {
	var p giteaPull
	status, body, err := g.call(http.MethodGet, g.path(fmt.Sprintf("pulls/%d", n)), nil).do(ctx, &p)
	switch {
	case err != nil:
		return p, err
	case status == http.StatusNotFound:
		return p, fmt.Errorf("%w: gitea: %s/%s#%d", gitrepo.ErrPullRequestNotFound, g.Owner, g.Repo, n)
	case status/100 != 2:
		return p, fmt.Errorf("gitea: reading pull request %d: HTTP %d: %s", n, status, giteaMessage(body))
	}
	return p, nil
}

// closer is the login of who last closed issue or pull request n, "" if the timeline
// holds no close event.
func (g *Gitea) closer(ctx context.Context, n int) (string, error) {
	by := ""
	for page := 1; page <= giteaMaxPages; page++ {
		var events []struct {
			Type string     `json:"type"`
			User *forgeUser `json:"user"`
		}
		q := fmt.Sprintf("issues/%d/timeline?limit=%d&page=%d", n, giteaPageSize, page)
		if err := g.get(ctx, g.path(q), "reading the timeline", &events); err != nil {
			return "", err
		}
		if len(events) == 0 { // a page may hold fewer than the limit and not be the last
			break
		}
		for _, e := range events {
			if e.Type == "close" && e.User != nil {
				by = e.User.Login
			}
		}
	}
	return by, nil
}

// ClosePullRequest implements gitrepo.PullRequestTracker: POST .../issues/{n}/comments,
// then PATCH .../pulls/{n} {"state": "closed"}. A pull request that is no longer open,
// before or (a race with a reviewer) during the call, is left as it is.
func (g *Gitea) ClosePullRequest(ctx context.Context, webURL, comment string) error {
	n, err := pullNumber(webURL, g.Owner, g.Repo, "pulls")
	if err != nil {
		return err
	}
	return closing{forge: "gitea", n: n,
		commentsURL: g.path(fmt.Sprintf("issues/%d/comments", n)), pullURL: g.path(fmt.Sprintf("pulls/%d", n)),
		open: func(ctx context.Context) (bool, error) {
			p, err := g.pull(ctx, n)
			return err == nil && p.State == "open", err
		},
		send: func(ctx context.Context, method, u string, body any) (int, string, error) {
			status, b, err := g.call(method, u, body).do(ctx, nil)
			return status, giteaMessage(b), err
		}}.close(ctx, comment)
}

// get is a GET whose answer must be 2xx.
func (g *Gitea) get(ctx context.Context, u, what string, out any) error {
	status, body, err := g.call(http.MethodGet, u, nil).do(ctx, out)
	if err == nil && status/100 != 2 {
		err = fmt.Errorf("gitea: %s: HTTP %d: %s", what, status, giteaMessage(body))
	}
	return err
}

// giteaMessage is the message of a Gitea error body ({"message": ..., "url": ...}), safe
// to put in an error.
func giteaMessage(body []byte) string {
	var e struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &e) != nil || e.Message == "" {
		return "no message"
	}
	return gitrepo.Sanitize(e.Message)
}

func (g *Gitea) call(method, u string, body any) forgeCall {
	c := forgeCall{forge: "gitea", client: g.Client, method: method, url: u,
		headers: map[string]string{"Authorization": "token " + g.token(), "Accept": "application/json"}}
	c.body = body
	return c
}

func (g *Gitea) path(rest string) string {
	return strings.TrimRight(g.BaseURL, "/") + "/api/v1/repos/" + url.PathEscape(g.Owner) + "/" + url.PathEscape(g.Repo) + "/" + rest
}

func (g *Gitea) token() string {
	if g.TokenFunc != nil {
		return g.TokenFunc()
	}
	return g.Token
}
