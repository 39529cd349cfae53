package gitea

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"
)

// Repo is a repository on the server, owned by ops. Its review helpers (Approve, Merge,
// Close) act as Actor; its helpers fail the test that created it.
type Repo struct {
	Owner, Name string
	// CloneURL is the HTTP clone URL, without credentials. The repository is private:
	// clone and push as Bot, the token as the password.
	CloneURL string
	// Bot is the user serve pushes as, a collaborator with write access.
	Bot User
	// Actor approves, merges and closes pull requests: the reviewer, unless As changed it.
	Actor User

	s *Server
	t testing.TB
}

// CreateRepo creates the private repository ops/name with a README on main, and makes
// the bot and the reviewer collaborators with write access: the bot to push review
// branches and open pull requests, the reviewer so that its approvals count and it may
// merge. The test t (a subtest may share its parent's server) owns the repository's
// helpers: they fail t.
func (s *Server) CreateRepo(t testing.TB, name string) *Repo {
	t.Helper()
	var created struct {
		CloneURL string `json:"clone_url"`
	}
	s.must(t, s.Ops, http.MethodPost, "/user/repos", map[string]any{
		"name": name, "private": true, "auto_init": true, "readme": "Default", "default_branch": "main",
	}, &created)
	r := &Repo{Owner: s.Ops.Name, Name: name, CloneURL: created.CloneURL, Bot: s.Bot, Actor: s.Reviewer, s: s, t: t}
	for _, u := range []User{s.Bot, s.Reviewer} {
		s.must(t, s.Ops, http.MethodPut, r.api("/collaborators/"+url.PathEscape(u.Name)), map[string]any{"permission": "write"}, nil)
	}
	return r
}

// As is the same repository with its review helpers acting as u.
func (r *Repo) As(u User) *Repo {
	c := *r
	c.Actor = u
	return &c
}

// api is the path of one of the repository's endpoints, below /api/v1.
func (r *Repo) api(rest string) string {
	return "/repos/" + url.PathEscape(r.Owner) + "/" + url.PathEscape(r.Name) + rest
}

// Protection is a branch protection rule.
type Protection struct {
	// RequiredApprovals is how many approving reviews a merge needs.
	RequiredApprovals int
	// PushAllowed names the users who may still push to the branch directly; with none,
	// nobody can, and the branch moves by merges alone.
	PushAllowed []string
	// AnyonePushes lets every writer push directly (PushAllowed is then unused).
	AnyonePushes bool
}

// Protect sets a protection rule on branch (POST /repos/{owner}/{repo}/branch_protections,
// as ops).
func (r *Repo) Protect(branch string, p Protection) {
	r.t.Helper()
	whitelist := len(p.PushAllowed) > 0 && !p.AnyonePushes
	r.s.must(r.t, r.s.Ops, http.MethodPost, r.api("/branch_protections"), map[string]any{
		"rule_name":                branch,
		"enable_push":              p.AnyonePushes || whitelist,
		"enable_push_whitelist":    whitelist,
		"push_whitelist_usernames": p.PushAllowed,
		"required_approvals":       p.RequiredApprovals,
	}, nil)
}

// AddWebhook makes Gitea deliver the events (default: pull_request) to target as JSON,
// signed with secret (X-Gitea-Signature), and returns the hook's id.
func (r *Repo) AddWebhook(target, secret string, events ...string) int64 {
	r.t.Helper()
	if len(events) == 0 {
		events = []string{"pull_request"}
	}
	var hook struct {
		ID int64 `json:"id"`
	}
	r.s.must(r.t, r.s.Ops, http.MethodPost, r.api("/hooks"), map[string]any{
		"type":   "gitea",
		"active": true,
		"events": events,
		"config": map[string]string{"url": target, "content_type": "json", "secret": secret, "http_method": "post"},
	}, &hook)
	return hook.ID
}

// BranchHead is the commit id at the tip of branch.
func (r *Repo) BranchHead(branch string) string {
	r.t.Helper()
	var b struct {
		Commit struct {
			ID string `json:"id"`
		} `json:"commit"`
	}
	r.s.must(r.t, r.s.Ops, http.MethodGet, r.api("/branches/"+url.PathEscape(branch)), nil, &b)
	if b.Commit.ID == "" {
		r.t.Fatalf("gitea: branch %s of %s/%s has no commit", branch, r.Owner, r.Name)
	}
	return b.Commit.ID
}

// String names the repository as owner/name.
func (r *Repo) String() string { return fmt.Sprintf("%s/%s", r.Owner, r.Name) }
