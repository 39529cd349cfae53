package forge_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/gitrepo"
	"github.com/magnum-gitops/magnum-gitops/gitrepo/forge"
)

// fakeGitHub is a fake of the documented GitHub REST API v3 pulls endpoints (POST and GET
// /repos/{owner}/{repo}/pulls, "Create a pull request" and "List pull requests"), answering
// with the documented response shapes: 201 with the pull request, 422 "Validation Failed"
// with "A pull request already exists for owner:branch." or "No commits between ...", 401
// "Bad credentials". GitHub itself cannot run here. It checks every request's method,
// path, headers, query and body.
type fakeGitHub struct {
	t      *testing.T
	prefix string // "" for api.github.com, "/api/v3" for GitHub Enterprise Server
	token  string
	mu     sync.Mutex
	pulls  []map[string]any
	// empty lists heads with no commits over the base.
	empty map[string]bool
}

func (f *fakeGitHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	docs := "https://docs.github.com/rest/pulls/pulls"
	if r.Header.Get("Authorization") != "Bearer "+f.token {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"message":"Bad credentials","documentation_url":"https://docs.github.com/rest","status":"401"}`)
		return
	}
	if got := r.Header.Get("Accept"); got != "application/vnd.github+json" {
		f.t.Errorf("Accept = %q", got)
	}
	if got := r.Header.Get("X-GitHub-Api-Version"); got != "2022-11-28" {
		f.t.Errorf("X-GitHub-Api-Version = %q", got)
	}
	if r.URL.Path != f.prefix+"/repos/octo/clusters/pulls" {
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, `{"message":"Not Found","documentation_url":%q,"status":"404"}`, docs)
		return
	}
	switch r.Method {
	case http.MethodPost:
		if ct := r.Header.Get("Content-Type"); ct != "application/json" {
			f.t.Errorf("Content-Type = %q", ct)
		}
		var req map[string]any
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			f.t.Errorf("body: %v", err)
		}
		for _, k := range []string{"head", "base", "title"} {
			if s, _ := req[k].(string); s == "" {
				f.t.Errorf("POST without %s: %v", k, req)
			}
		}
		head := req["head"].(string)
		if f.empty[head] {
			w.WriteHeader(http.StatusUnprocessableEntity)
			fmt.Fprintf(w, `{"message":"Validation Failed","errors":[{"resource":"PullRequest","code":"custom","message":"No commits between main and %s"}],"documentation_url":%q,"status":"422"}`, head, docs)
			return
		}
		for _, p := range f.pulls {
			if p["head"].(map[string]any)["ref"] == head && p["state"] == "open" {
				w.WriteHeader(http.StatusUnprocessableEntity)
				fmt.Fprintf(w, `{"message":"Validation Failed","errors":[{"resource":"PullRequest","code":"custom","message":"A pull request already exists for octo:%s."}],"documentation_url":%q,"status":"422"}`, head, docs)
				return
			}
		}
		n := len(f.pulls) + 1
		pr := map[string]any{
			"url":      fmt.Sprintf("https://api.github.com/repos/octo/clusters/pulls/%d", n),
			"id":       1000 + n,
			"number":   n,
			"html_url": fmt.Sprintf("https://github.com/octo/clusters/pull/%d", n),
			"state":    "open", "title": req["title"], "body": req["body"],
			"head": map[string]any{"label": "octo:" + head, "ref": head, "sha": "6dcb09b5b57875f334f61aebed695e2e4193db5e"},
			"base": map[string]any{"label": "octo:" + req["base"].(string), "ref": req["base"]},
		}
		f.pulls = append(f.pulls, pr)
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(pr)
	case http.MethodGet:
		q := r.URL.Query()
		if q.Get("state") != "open" || !strings.HasPrefix(q.Get("head"), "octo:") {
			f.t.Errorf("listing pulls with query %q, want head=octo:branch&state=open", r.URL.RawQuery)
		}
		out := []map[string]any{}
		for _, p := range f.pulls {
			if p["head"].(map[string]any)["label"] == q.Get("head") && p["state"] == q.Get("state") {
				out = append(out, p)
			}
		}
		json.NewEncoder(w).Encode(out)
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}

func TestGitHubPullRequests(t *testing.T) {
	t.Parallel()
	for _, prefix := range []string{"", "/api/v3"} {
		fake := &fakeGitHub{t: t, prefix: prefix, token: "ghp-token", empty: map[string]bool{"magnum/empty": true}}
		api := httptest.NewServer(fake)
		gh := &forge.GitHub{BaseURL: api.URL + prefix + "/", Owner: "octo", Repo: "clusters", Token: "ghp-token"}
		ctx := context.Background()
		pr := gitrepo.PullRequest{Head: "magnum/prod-a/evt-1", Base: "main", Title: "magnum: resize prod-a", Body: "why\n\nMagnum-Event-ID: 1\n"}
		for i := 0; i < 2; i++ { // the second finds the open one after a 422
			url, err := gh.OpenPullRequest(ctx, pr)
			if err != nil || url != "https://github.com/octo/clusters/pull/1" {
				t.Errorf("%q call %d: %q %v", prefix, i, url, err)
			}
		}
		if len(fake.pulls) != 1 || fake.pulls[0]["body"] != pr.Body || fake.pulls[0]["base"].(map[string]any)["ref"] != "main" {
			t.Errorf("%q: pulls = %v", prefix, fake.pulls)
		}
		other := pr
		other.Head = "magnum/prod-b/evt-2"
		if url, err := gh.OpenPullRequest(ctx, other); err != nil || url != "https://github.com/octo/clusters/pull/2" {
			t.Errorf("%q: second branch: %q %v", prefix, url, err)
		}
		empty := pr
		empty.Head = "magnum/empty"
		if _, err := gh.OpenPullRequest(ctx, empty); err == nil || !strings.Contains(err.Error(), "No commits between") {
			t.Errorf("%q: 422 for another reason: %v", prefix, err)
		}
		bad := *gh
		bad.Token = "wrong-token"
		if _, err := bad.OpenPullRequest(ctx, pr); !errors.Is(err, gitrepo.ErrAuthentication) || strings.Contains(err.Error(), "wrong-token") {
			t.Errorf("%q: wrong token: %v", prefix, err)
		}
		api.Close()
	}
}
