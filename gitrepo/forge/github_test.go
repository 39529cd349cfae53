package forge_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/gitrepo"
	"github.com/magnum-gitops/magnum-gitops/gitrepo/forge"
)

// fakeGitHub is a fake of the documented GitHub REST API v3 endpoints review mode uses:
// "Create a pull request" and "List pull requests" (POST and GET
// /repos/{owner}/{repo}/pulls), "Get a pull request" and "Update a pull request" (GET and
// PATCH .../pulls/{n}), "Get an issue" (GET .../issues/{n}) and "Create an issue comment"
// (POST .../issues/{n}/comments), answering with the documented response shapes: 201 with
// the pull request, 422 "Validation Failed" with "A pull request already exists for
// owner:branch." or "No commits between ...", 401 "Bad credentials", 404 "Not Found".
// GitHub itself cannot run here. It checks every request's method, path, headers, query
// and body; merge and closeAs stand for a reviewer acting in GitHub's web interface.
type fakeGitHub struct {
	t      *testing.T
	prefix string // "" for api.github.com, "/api/v3" for GitHub Enterprise Server
	token  string // the bot's, whose login is magnum-bot
	mu     sync.Mutex
	pulls  []map[string]any
	// closedBy is the login in each issue's closed_by, by pull request number.
	closedBy map[int]string
	comments map[int][]map[string]any
	// empty lists heads with no commits over the base.
	empty map[string]bool
}

var fakeGitHubItem = regexp.MustCompile(`^/repos/octo/clusters/(pulls|issues)/([0-9]+)(/comments)?$`)

func (f *fakeGitHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
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
	if (r.Method == http.MethodPost || r.Method == http.MethodPatch) && r.Header.Get("Content-Type") != "application/json" {
		f.t.Errorf("%s %s: Content-Type = %q", r.Method, r.URL.Path, r.Header.Get("Content-Type"))
	}
	path, ok := strings.CutPrefix(r.URL.Path, f.prefix)
	if !ok {
		f.notFound(w)
		return
	}
	if path == "/repos/octo/clusters/pulls" {
		f.pullsEndpoint(w, r)
		return
	}
	m := fakeGitHubItem.FindStringSubmatch(path)
	if m == nil {
		f.notFound(w)
		return
	}
	n, _ := strconv.Atoi(m[2])
	if n < 1 || n > len(f.pulls) {
		f.notFound(w)
		return
	}
	pr := f.pulls[n-1]
	switch kind := m[1] + m[3] + " " + r.Method; kind {
	case "pulls GET":
		json.NewEncoder(w).Encode(pr)
	case "pulls PATCH":
		var req map[string]any
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			f.t.Errorf("PATCH body: %v", err)
		}
		if pr["merged"] == true {
			w.WriteHeader(http.StatusUnprocessableEntity)
			fmt.Fprint(w, `{"message":"Validation Failed","errors":[{"resource":"PullRequest","code":"custom","message":"Cannot change the state of a merged pull request."}],"status":"422"}`)
			return
		}
		if req["state"] == "closed" && pr["state"] == "open" {
			pr["state"] = "closed"
			f.closedBy[n] = "magnum-bot"
		}
		json.NewEncoder(w).Encode(pr)
	case "issues GET":
		issue := map[string]any{"number": n, "state": pr["state"], "title": pr["title"],
			"html_url":     pr["html_url"],
			"pull_request": map[string]any{"url": pr["url"], "html_url": pr["html_url"]},
			"closed_by":    nil}
		if by := f.closedBy[n]; by != "" {
			issue["closed_by"] = map[string]any{"login": by, "type": "User"}
		}
		json.NewEncoder(w).Encode(issue)
	case "issues/comments POST":
		var req map[string]any
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req["body"] == "" {
			f.t.Errorf("comment body: %v %v", req, err)
		}
		c := map[string]any{"id": 5000 + len(f.comments[n]), "body": req["body"], "user": map[string]any{"login": "magnum-bot"}}
		f.comments[n] = append(f.comments[n], c)
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(c)
	default:
		f.t.Errorf("unexpected request %s", kind)
		f.notFound(w)
	}
}

func (f *fakeGitHub) notFound(w http.ResponseWriter) {
	w.WriteHeader(http.StatusNotFound)
	fmt.Fprint(w, `{"message":"Not Found","documentation_url":"https://docs.github.com/rest","status":"404"}`)
}

// merge merges pull request n as by, GitHub's way: state closed, merged, merged_by, and
// merge_commit_sha now the commit on the base (a merge commit, the squashed commit or the
// rebased head, depending on the style the reviewer chose); the issue's closed_by is the
// merger too.
func (f *fakeGitHub) merge(n int, by, commit string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	pr := f.pulls[n-1]
	pr["state"], pr["merged"], pr["merge_commit_sha"] = "closed", true, commit
	pr["merged_by"] = map[string]any{"login": by, "type": "User"}
	f.closedBy[n] = by
}

// setMergeable is GitHub's background computation of whether pull request n merges
// cleanly: mergeable_state "clean", or "dirty" with mergeable false for a conflict.
func (f *fakeGitHub) setMergeable(n int, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pulls[n-1]["mergeable"], f.pulls[n-1]["mergeable_state"] = ok, map[bool]string{true: "clean", false: "dirty"}[ok]
}

// closeAs closes pull request n without merge as by.
func (f *fakeGitHub) closeAs(n int, by string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pulls[n-1]["state"] = "closed"
	f.closedBy[n] = by
}

func (f *fakeGitHub) pullsEndpoint(w http.ResponseWriter, r *http.Request) {
	docs := "https://docs.github.com/rest/pulls/pulls"
	switch r.Method {
	case http.MethodPost:
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
			// While a pull request is open, GitHub's merge_commit_sha is its test merge.
			"merged": false, "merged_by": nil, "merge_commit_sha": "e5bd3914e2e596debea16f433f57875b5b90bcd6",
			// null while GitHub computes it (just after a push), then true or false.
			"mergeable": nil, "mergeable_state": "unknown",
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
		f.notFound(w)
	}
}

// newFakeGitHub serves a fake for the bot's token ghp-token and a client of it.
func newFakeGitHub(t *testing.T, prefix string) (*fakeGitHub, *forge.GitHub) {
	fake := &fakeGitHub{t: t, prefix: prefix, token: "ghp-token", empty: map[string]bool{"magnum/empty": true},
		closedBy: map[int]string{}, comments: map[int][]map[string]any{}}
	api := httptest.NewServer(fake)
	t.Cleanup(api.Close)
	return fake, &forge.GitHub{BaseURL: api.URL + prefix + "/", Owner: "octo", Repo: "clusters", Token: "ghp-token"}
}

func TestGitHubPullRequests(t *testing.T) {
	t.Parallel()
	for _, prefix := range []string{"", "/api/v3"} {
		fake, gh := newFakeGitHub(t, prefix)
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
	}
}

// TestGitHubPullRequestStatus follows pull requests through the states a reviewer can put
// them in: each merge style leaves merge_commit_sha naming the commit on the base.
func TestGitHubPullRequestStatus(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, prefix := range []string{"", "/api/v3"} {
		fake, gh := newFakeGitHub(t, prefix)
		for _, tc := range []struct {
			name string
			act  func(n int) // what the reviewer does; nil: nothing
			want gitrepo.PullRequestStatus
		}{
			{"open", nil, gitrepo.PullRequestStatus{State: gitrepo.PullRequestOpen}},
			{"merge commit", func(n int) { fake.merge(n, "reviewer", "1111111111111111111111111111111111111111") },
				gitrepo.PullRequestStatus{State: gitrepo.PullRequestMerged, By: "reviewer", MergeCommit: "1111111111111111111111111111111111111111"}},
			{"squash", func(n int) { fake.merge(n, "reviewer", "2222222222222222222222222222222222222222") },
				gitrepo.PullRequestStatus{State: gitrepo.PullRequestMerged, By: "reviewer", MergeCommit: "2222222222222222222222222222222222222222"}},
			{"rebase", func(n int) { fake.merge(n, "other-reviewer", "3333333333333333333333333333333333333333") },
				gitrepo.PullRequestStatus{State: gitrepo.PullRequestMerged, By: "other-reviewer", MergeCommit: "3333333333333333333333333333333333333333"}},
			{"closed without merge", func(n int) { fake.closeAs(n, "ops") },
				gitrepo.PullRequestStatus{State: gitrepo.PullRequestClosed, By: "ops"}},
		} {
			head := "magnum/prod-a/" + strings.ReplaceAll(tc.name, " ", "-")
			u, err := gh.OpenPullRequest(ctx, gitrepo.PullRequest{Head: head, Base: "main", Title: tc.name})
			if err != nil {
				t.Fatal(err)
			}
			n := len(fake.pulls)
			if tc.act != nil {
				tc.act(n)
			}
			want := tc.want
			want.URL, want.Number, want.Head = u, n, head
			if st, err := gh.PullRequestStatus(ctx, u); err != nil || st != want {
				t.Errorf("%q %s: %+v, %v; want %+v", prefix, tc.name, st, err, want)
			}
		}
		for _, tc := range []struct {
			url  string
			want error
		}{
			{"https://github.com/octo/clusters/pull/99", gitrepo.ErrPullRequestNotFound},
			{"https://github.com/octo/other/pull/1", gitrepo.ErrNotPullRequestURL},
			{"https://github.com/octo/clusters/pulls/1", gitrepo.ErrNotPullRequestURL},
		} {
			if _, err := gh.PullRequestStatus(ctx, tc.url); !errors.Is(err, tc.want) {
				t.Errorf("%q %s: %v, want %v", prefix, tc.url, err, tc.want)
			}
		}
		bad := *gh
		bad.Token = "wrong-token"
		if _, err := bad.PullRequestStatus(ctx, "https://github.com/octo/clusters/pull/1"); !errors.Is(err, gitrepo.ErrAuthentication) || strings.Contains(err.Error(), "wrong-token") {
			t.Errorf("%q: wrong token: %v", prefix, err)
		}
	}
}

// TestGitHubClosePullRequest closes a superseded pull request with a comment, once.
func TestGitHubClosePullRequest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fake, gh := newFakeGitHub(t, "")
	open := func(head string) string {
		u, err := gh.OpenPullRequest(ctx, gitrepo.PullRequest{Head: head, Base: "main", Title: head})
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	superseded, merged, closed := open("magnum/a/1"), open("magnum/a/2"), open("magnum/a/3")
	fake.merge(2, "reviewer", "4444444444444444444444444444444444444444")
	fake.closeAs(3, "ops")
	const why = "Superseded by the next event for cluster a."
	for _, u := range []string{superseded, superseded, merged, closed} { // the second close of superseded, and those of merged and closed, are no-ops
		if err := gh.ClosePullRequest(ctx, u, why); err != nil {
			t.Errorf("closing %s: %v", u, err)
		}
	}
	for _, tc := range []struct {
		url      string
		want     gitrepo.PullRequestState
		by       string
		comments int
	}{
		{superseded, gitrepo.PullRequestClosed, "magnum-bot", 1},
		{merged, gitrepo.PullRequestMerged, "reviewer", 0},
		{closed, gitrepo.PullRequestClosed, "ops", 0},
	} {
		st, err := gh.PullRequestStatus(ctx, tc.url)
		if err != nil || st.State != tc.want || st.By != tc.by || len(fake.comments[st.Number]) != tc.comments {
			t.Errorf("%s: %+v %v, %d comments; want %s by %s, %d comments", tc.url, st, err, len(fake.comments[st.Number]), tc.want, tc.by, tc.comments)
		}
	}
	if c := fake.comments[1]; len(c) != 1 || c[0]["body"] != why {
		t.Errorf("comments = %v", c)
	}
	if err := gh.ClosePullRequest(ctx, "https://github.com/octo/clusters/pull/42", why); !errors.Is(err, gitrepo.ErrPullRequestNotFound) {
		t.Errorf("closing a missing pull request: %v", err)
	}
}

// TestGitHubUnmergeable: an open pull request is unmergeable only once GitHub has computed
// that it conflicts (mergeable false); while it computes (null) or when it merges cleanly,
// it is not.
func TestGitHubUnmergeable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fake, gh := newFakeGitHub(t, "")
	u, err := gh.OpenPullRequest(ctx, gitrepo.PullRequest{Head: "magnum/a/1", Base: "main", Title: "a"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		set  func()
		want bool
	}{
		{"computing", func() {}, false},
		{"clean", func() { fake.setMergeable(1, true) }, false},
		{"conflict", func() { fake.setMergeable(1, false) }, true},
	} {
		tc.set()
		st, err := gh.PullRequestStatus(ctx, u)
		if err != nil || st.State != gitrepo.PullRequestOpen || st.Unmergeable != tc.want {
			t.Errorf("%s: %+v %v, want open, Unmergeable %v", tc.name, st, err, tc.want)
		}
	}
}
