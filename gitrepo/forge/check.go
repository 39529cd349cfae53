package forge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/magnum-gitops/magnum-gitops/gitrepo"
)

// ErrCannotPush means the token reads the repository but may not push to it, so no review
// branch could ever be pushed nor a pull request opened.
var ErrCannotPush = errors.New("forge: the token may not push to the repository")

// repoPermissions is the part of a repository both forges answer with the caller's rights.
type repoPermissions struct {
	Permissions struct {
		Push bool `json:"push"`
	} `json:"permissions"`
}

// check reads the repository with the token: a token the forge refuses is
// gitrepo.ErrAuthentication, a repository it does not show gitrepo.ErrRepositoryNotFound,
// one it may not push to ErrCannotPush.
func check(ctx context.Context, c forgeCall, name string) error {
	var p repoPermissions
	status, _, err := c.do(ctx, &p)
	switch {
	case err != nil:
		return err
	case status == http.StatusNotFound:
		return fmt.Errorf("%w: %s (or the token may not see it)", gitrepo.ErrRepositoryNotFound, name)
	case status/100 != 2:
		return fmt.Errorf("%s: reading the repository: HTTP %d", name, status)
	case !p.Permissions.Push:
		return fmt.Errorf("%w: %s", ErrCannotPush, name)
	}
	return nil
}

// Check reads the repository as review mode's token, before anything is pushed: serve
// refuses to start on a token Gitea refuses, a repository it does not show, or one the
// token may not push to.
func (g *Gitea) Check(ctx context.Context) error {
	return check(ctx, g.call(http.MethodGet, strings.TrimSuffix(g.path(""), "/"), nil), "gitea: "+g.Owner+"/"+g.Repo+" at "+g.BaseURL)
}

// Check is Gitea.Check for GitHub: GET /repos/{owner}/{repo}.
func (g *GitHub) Check(ctx context.Context) error {
	return check(ctx, g.call(http.MethodGet, strings.TrimSuffix(g.repoPath(""), "/"), nil), "github: "+g.Owner+"/"+g.Repo)
}
