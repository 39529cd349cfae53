package gitrepo_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/gitrepo"
	"github.com/magnum-gitops/magnum-gitops/gitrepo/forge"
)

// fakeGitea implements the part of the Gitea API v1 that opens pull requests, from its
// documented shapes (POST/GET /api/v1/repos/{owner}/{repo}/pulls, "Authorization: token"),
// and checks every request.
type fakeGitea struct {
	t     *testing.T
	mu    sync.Mutex
	token string
	pulls []map[string]any
}

func (f *fakeGitea) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.Header.Get("Authorization") != "token "+f.token {
		http.Error(w, `{"message":"token is required"}`, http.StatusUnauthorized)
		return
	}
	if r.URL.Path != "/api/v1/repos/cloud/clusters/pulls" {
		http.Error(w, `{"message":"not found"}`, http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch r.Method {
	case http.MethodPost:
		if r.Header.Get("Content-Type") != "application/json" {
			f.t.Errorf("Content-Type = %q", r.Header.Get("Content-Type"))
		}
		var req map[string]string
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, k := range []string{"head", "base", "title"} {
			if req[k] == "" {
				http.Error(w, `{"message":"`+k+` is required"}`, http.StatusUnprocessableEntity)
				return
			}
		}
		for _, p := range f.pulls {
			if p["head"].(map[string]any)["ref"] == req["head"] {
				w.WriteHeader(http.StatusConflict)
				w.Write([]byte(`{"message":"pull request already exists for these targets"}`))
				return
			}
		}
		n := len(f.pulls) + 1
		pr := map[string]any{"number": n, "html_url": "https://gitea.example.org/cloud/clusters/pulls/" + itoa(n),
			"title": req["title"], "body": req["body"], "state": "open",
			"head": map[string]any{"ref": req["head"]}, "base": map[string]any{"ref": req["base"]}}
		f.pulls = append(f.pulls, pr)
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(pr)
	case http.MethodGet:
		if r.URL.Query().Get("state") != "open" {
			f.t.Errorf("listing pulls without state=open: %s", r.URL.RawQuery)
		}
		json.NewEncoder(w).Encode(f.pulls)
	default:
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestReviewBranchAndPullRequest(t *testing.T) {
	t.Parallel()
	s := newGitServer(t)
	url := s.newRepo("review", true)
	fake := &fakeGitea{t: t, token: "gitea-token"}
	api := httptest.NewServer(fake)
	defer api.Close()
	o := testOptions(url)
	o.PullRequests = &forge.Gitea{BaseURL: api.URL, Owner: "cloud", Repo: "clusters", Token: "gitea-token"}
	r := open(t, o)
	main := strings.TrimSpace(git(t, s.dir("review"), "rev-parse", "main"))

	c := change("magnum: resize cluster prod-a", map[string]string{"c/prod-a/helmrelease.yaml": "replicas: 5\n"})
	c.Branch = "magnum/prod-a-2b7x/evt-02"
	res, err := r.Apply(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if res.Branch != c.Branch || res.PullRequestURL != "https://gitea.example.org/cloud/clusters/pulls/1" {
		t.Errorf("result = %+v", res)
	}
	if got := strings.TrimSpace(git(t, s.dir("review"), "rev-parse", "main")); got != main {
		t.Error("review mode moved main")
	}
	if got, ok := fileAt(t, s.dir("review"), c.Branch, "c/prod-a/helmrelease.yaml"); !ok || string(got) != "replicas: 5\n" {
		t.Errorf("review branch content = %q", got)
	}
	if p := fake.pulls[0]; p["base"].(map[string]any)["ref"] != "main" || p["title"] != c.Subject {
		t.Errorf("pull request = %v", p)
	}
	// The same event again: no new commit, and the open pull request is reused.
	c2 := c
	c2.Files = map[string][]byte{"c/prod-a/helmrelease.yaml": []byte("replicas: 6\n")}
	res, err = r.Apply(context.Background(), c2)
	if err != nil {
		t.Fatal(err)
	}
	if len(fake.pulls) != 1 || res.PullRequestURL != "https://gitea.example.org/cloud/clusters/pulls/1" {
		t.Errorf("second push opened another pull request: %d, %+v", len(fake.pulls), res)
	}
	checkRepo(t, s.dir("review"))
	onlyFastForwards(t, s.dir("review"), c.Branch)

	// A change that main already holds has nothing to review: no branch, no pull request.
	same := change("magnum: nothing new", map[string]string{"README.md": "# clusters\n"})
	same.Branch = "magnum/prod-a-2b7x/evt-03"
	res, err = r.Apply(context.Background(), same)
	if err != nil || !res.NoOp || res.PullRequestURL != "" {
		t.Errorf("review of an unchanged file: %+v %v", res, err)
	}
	if out := git(t, s.dir("review"), "branch", "--list", "magnum/prod-a-2b7x/evt-03"); out != "" {
		t.Errorf("a branch was created for nothing: %q", out)
	}

	bad := &forge.Gitea{BaseURL: api.URL, Owner: "cloud", Repo: "clusters", Token: "wrong"}
	if _, err := bad.OpenPullRequest(context.Background(), gitrepo.PullRequest{Head: "h", Base: "main", Title: "t"}); err == nil ||
		!strings.Contains(err.Error(), "401") {
		t.Errorf("wrong token: %v", err)
	}
}

// TestReviewNeverWritesProtectedBranches: a review change whose branch is the configured
// branch, empty, malformed, or matches a protected pattern is refused before anything is
// pushed — so a branch template that renders to "main" cannot write main.
func TestReviewNeverWritesProtectedBranches(t *testing.T) {
	t.Parallel()
	s := newGitServer(t)
	bare := s.dir("protected")
	o := testOptions(s.newRepo("protected", true))
	o.ProtectedBranches = []string{"release/*", "prod"}
	r := open(t, o)
	git(t, bare, "branch", "release/1.0", "main")
	refs := git(t, bare, "for-each-ref")
	pushes := s.pushes.Load()
	for _, tc := range []struct {
		branch string
		review bool
		want   string
	}{
		{"main", true, `review branch "main" is protected`},
		{"main", false, `review branch "main" is protected`}, // a branch implies review
		{"", true, "review branch: empty"},
		{"release/1.0", true, `review branch "release/1.0" is protected`},
		{"release/2.0", false, `review branch "release/2.0" is protected`},
		{"prod", true, `review branch "prod" is protected`},
		{"bad..name", true, "not a valid branch name"},
		{"-x", true, "not a valid branch name"},
		{"a.lock", true, "not a valid branch name"},
	} {
		c := change("magnum: resize", map[string]string{"c/x.yaml": "x"})
		c.Branch, c.Review = tc.branch, tc.review
		_, err := r.Apply(context.Background(), c)
		if !errors.Is(err, gitrepo.ErrInvalidChange) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("branch %q review=%v: err = %v, want ErrInvalidChange %q", tc.branch, tc.review, err, tc.want)
		}
		if tc.branch != "" {
			if b, err := r.Begin(context.Background(), tc.branch); !errors.Is(err, gitrepo.ErrInvalidChange) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Begin %q: err = %v", tc.branch, err)
				if err == nil {
					b.Close()
				}
			}
		}
	}
	if s.pushes.Load() != pushes || git(t, bare, "for-each-ref") != refs {
		t.Error("a refused review change reached the remote")
	}
	// An unprotected review branch still works.
	c := change("magnum: resize", map[string]string{"c/x.yaml": "x"})
	c.Branch, c.Review = "release-candidates/x", true
	if res, err := r.Apply(context.Background(), c); err != nil || res.Branch != c.Branch {
		t.Errorf("allowed review branch: %+v %v", res, err)
	}
}
