package forge_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/magnum-gitops/magnum-gitops/gitrepo"
	"github.com/magnum-gitops/magnum-gitops/gitrepo/forge"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv/gitea"
)

// workTree is a clone of a repository on the test Gitea, pushing as the repository's bot
// with the git CLI, as any client of the forge would.
type workTree struct {
	t    *testing.T
	dir  string
	auth string // an http.extraHeader value; never printed
}

func cloneRepo(t *testing.T, r *gitea.Repo) *workTree {
	t.Helper()
	w := &workTree{t: t, dir: filepath.Join(t.TempDir(), "work"),
		auth: "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(r.Bot.Name+":"+r.Bot.Token))}
	if out, err := w.run("clone", "-q", r.CloneURL, w.dir); err != nil {
		t.Fatalf("git clone: %v: %s", err, out)
	}
	return w
}

// run runs git in the clone (in its parent before the clone exists), the bot's
// credentials in a header. It returns git's combined output, which never holds the header.
func (w *workTree) run(args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-c", "http.extraHeader=" + w.auth}, args...)...)
	cmd.Dir = w.dir
	if _, err := os.Stat(w.dir); err != nil {
		cmd.Dir = filepath.Dir(w.dir)
	}
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=magnum-bot", "GIT_AUTHOR_EMAIL=magnum-bot@example.org",
		"GIT_COMMITTER_NAME=magnum-bot", "GIT_COMMITTER_EMAIL=magnum-bot@example.org")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (w *workTree) git(args ...string) string {
	w.t.Helper()
	out, err := w.run(args...)
	if err != nil {
		w.t.Fatalf("git %s: %v: %s", args[0], err, out)
	}
	return strings.TrimSpace(out)
}

// commit writes files on a new branch from origin/main and commits them; it returns the
// commit id.
func (w *workTree) commit(branch string, files map[string]string) string {
	w.t.Helper()
	w.git("checkout", "-q", "-B", branch, "origin/main")
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(w.dir, name), []byte(content), 0o644); err != nil {
			w.t.Fatal(err)
		}
	}
	w.git("add", "-A")
	w.git("commit", "-q", "-m", "magnum: change on "+branch+"\n\nMagnum-Event-ID: "+branch)
	return w.git("rev-parse", "HEAD")
}

// pushBranch commits files on branch and pushes it; it returns the pushed commit.
func (w *workTree) pushBranch(branch string, files map[string]string) string {
	w.t.Helper()
	id := w.commit(branch, files)
	w.git("push", "-q", "origin", "HEAD:refs/heads/"+branch)
	return id
}

// newGitea is the client serve would build for r: the bot's token.
func newGitea(srv *gitea.Server, r *gitea.Repo) *forge.Gitea {
	return &forge.Gitea{BaseURL: srv.URL, Owner: r.Owner, Repo: r.Name, Token: srv.Bot.Token}
}

// openPull pushes a branch with one file and opens its pull request as the bot.
func openPull(t *testing.T, srv *gitea.Server, r *gitea.Repo, w *workTree, branch string) (string, string) {
	t.Helper()
	head := w.pushBranch(branch, map[string]string{strings.ReplaceAll(branch, "/", "-") + ".yaml": "replicas: 3\n"})
	u, err := newGitea(srv, r).OpenPullRequest(context.Background(), gitrepo.PullRequest{
		Head: branch, Base: "main", Title: "magnum: " + branch, Body: "Magnum-Event-ID: " + branch + "\n"})
	if err != nil {
		t.Fatal(err)
	}
	return u, head
}

// status reads a pull request's status, failing the test on error.
func status(t *testing.T, g *forge.Gitea, u string) gitrepo.PullRequestStatus {
	t.Helper()
	st, err := g.PullRequestStatus(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// mergeable waits (Gitea checks a pull request in the background) until the status of
// u says it can (or cannot) be merged as it stands, and returns it.
func mergeable(t *testing.T, g *forge.Gitea, u string, want bool) gitrepo.PullRequestStatus {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		st := status(t, g, u)
		if st.Unmergeable != want {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: Unmergeable stayed %v for a minute", u, st.Unmergeable)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestGitea runs the Gitea client against a real Gitea: every subtest has a repository
// of its own on one server.
func TestGitea(t *testing.T) {
	t.Parallel()
	srv := gitea.Start(t)
	ctx := context.Background()

	t.Run("open, open again, status open", func(t *testing.T) {
		t.Parallel()
		r := srv.CreateRepo(t, "open")
		w := cloneRepo(t, r)
		g := newGitea(srv, r)
		u, _ := openPull(t, srv, r, w, "magnum/prod-a/evt-1")
		if want := fmt.Sprintf("%s/%s/%s/pulls/1", srv.URL, r.Owner, r.Name); u != want {
			t.Errorf("URL = %q, want %q", u, want)
		}
		again, err := g.OpenPullRequest(ctx, gitrepo.PullRequest{Head: "magnum/prod-a/evt-1", Base: "main", Title: "again"})
		if err != nil || again != u {
			t.Errorf("opening again = %q, %v; want the open one %q", again, err, u)
		}
		want := gitrepo.PullRequestStatus{URL: u, Number: 1, State: gitrepo.PullRequestOpen, Head: "magnum/prod-a/evt-1"}
		if st := mergeable(t, g, u, true); st != want {
			t.Errorf("status = %+v, want %+v", st, want)
		}
	})

	t.Run("unmergeable after another merge", func(t *testing.T) {
		t.Parallel()
		r := srv.CreateRepo(t, "conflict")
		w := cloneRepo(t, r)
		g := newGitea(srv, r)
		// Two changes to the same file, proposed against the same main.
		w.pushBranch("magnum/prod-a/evt-1", map[string]string{"hr.yaml": "replicas: 3\n"})
		w.pushBranch("magnum/prod-a/evt-2", map[string]string{"hr.yaml": "replicas: 5\n"})
		var urls []string
		for _, b := range []string{"magnum/prod-a/evt-1", "magnum/prod-a/evt-2"} {
			u, err := g.OpenPullRequest(ctx, gitrepo.PullRequest{Head: b, Base: "main", Title: b})
			if err != nil {
				t.Fatal(err)
			}
			urls = append(urls, u)
		}
		mergeable(t, g, urls[1], true)
		r.Merge(1, gitea.MergeCommit, "")
		if st := mergeable(t, g, urls[1], false); st.State != gitrepo.PullRequestOpen {
			t.Errorf("the conflicting pull request: %+v", st)
		}
	})

	for _, style := range []gitea.MergeStyle{gitea.MergeCommit, gitea.Squash, gitea.Rebase} {
		t.Run("merged by "+string(style), func(t *testing.T) {
			t.Parallel()
			r := srv.CreateRepo(t, "merge-"+string(style))
			w := cloneRepo(t, r)
			g := newGitea(srv, r)
			u, pushed := openPull(t, srv, r, w, "magnum/prod-a/evt-"+string(style))
			// main moves on after the branch was pushed (another cluster's change), so
			// that no style can fast-forward; then it is protected.
			w.commit("other", map[string]string{"other.yaml": "another cluster\n"})
			w.git("push", "-q", "origin", "HEAD:refs/heads/main")
			r.Protect("main", gitea.Protection{RequiredApprovals: 1})
			if err := r.TryMerge(1, style, ""); err == nil {
				t.Fatal("Gitea merged without the required approval")
			}
			if st := status(t, g, u); st.State != gitrepo.PullRequestOpen || st.By != "" || st.MergeCommit != "" {
				t.Errorf("status before the merge = %+v", st)
			}
			r.Approve(1)
			r.Merge(1, style, "cluster change reviewed\n\nmessage edited by the reviewer")
			st := status(t, g, u)
			main := r.BranchHead("main")
			if st.State != gitrepo.PullRequestMerged || st.By != srv.Reviewer.Name || st.MergeCommit != main || st.Number != 1 {
				t.Errorf("status after the merge = %+v, main at %s", st, main)
			}
			// Only a merge commit keeps the pushed commit's id in main's history; the
			// others rewrite it.
			if kept := w.ancestor(pushed, main); kept != (style == gitea.MergeCommit) {
				t.Errorf("pushed commit in main's history: %v", kept)
			}
			// Closing a merged pull request leaves it merged.
			if err := g.ClosePullRequest(ctx, u, "superseded"); err != nil {
				t.Errorf("closing a merged pull request: %v", err)
			}
			if st := status(t, g, u); st.State != gitrepo.PullRequestMerged {
				t.Errorf("status after closing a merged one = %+v", st)
			}
		})
	}

	t.Run("closed without merge", func(t *testing.T) {
		t.Parallel()
		r := srv.CreateRepo(t, "closed")
		w := cloneRepo(t, r)
		g := newGitea(srv, r)
		u, _ := openPull(t, srv, r, w, "magnum/prod-a/evt-9")
		main := r.BranchHead("main")
		r.As(srv.Ops).Close(1)
		want := gitrepo.PullRequestStatus{URL: u, Number: 1, State: gitrepo.PullRequestClosed, By: srv.Ops.Name, Head: "magnum/prod-a/evt-9"}
		if st := status(t, g, u); st != want {
			t.Errorf("status = %+v, want %+v", st, want)
		}
		if r.BranchHead("main") != main {
			t.Error("closing without merge moved main")
		}
		// Closing it again: no error, no comment.
		if err := g.ClosePullRequest(ctx, u, "superseded"); err != nil {
			t.Errorf("closing a closed pull request: %v", err)
		}
		if c := comments(t, srv, r, 1); len(c) != 0 {
			t.Errorf("comments on a pull request closed before: %v", c)
		}
	})

	t.Run("ClosePullRequest comments, then closes", func(t *testing.T) {
		t.Parallel()
		r := srv.CreateRepo(t, "close")
		w := cloneRepo(t, r)
		g := newGitea(srv, r)
		u, _ := openPull(t, srv, r, w, "magnum/prod-a/evt-2")
		const why = "Superseded by a newer event for cluster prod-a."
		for i := 0; i < 2; i++ { // the second is a no-op
			if err := g.ClosePullRequest(ctx, u, why); err != nil {
				t.Fatalf("call %d: %v", i, err)
			}
		}
		if st := status(t, g, u); st.State != gitrepo.PullRequestClosed || st.By != srv.Bot.Name {
			t.Errorf("status = %+v, want closed by %s", st, srv.Bot.Name)
		}
		if c := comments(t, srv, r, 1); len(c) != 1 || c[0] != srv.Bot.Name+": "+why {
			t.Errorf("comments = %q", c)
		}
	})

	t.Run("wrong token", func(t *testing.T) {
		t.Parallel()
		r := srv.CreateRepo(t, "token")
		w := cloneRepo(t, r)
		u, _ := openPull(t, srv, r, w, "magnum/prod-a/evt-3")
		const token = "d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f7a8b9c0d"
		bad := newGitea(srv, r)
		bad.Token = token
		_, errOpen := bad.OpenPullRequest(ctx, gitrepo.PullRequest{Head: "magnum/prod-a/evt-3", Base: "main", Title: "t"})
		_, errStatus := bad.PullRequestStatus(ctx, u)
		errClose := bad.ClosePullRequest(ctx, u, "x")
		for name, err := range map[string]error{"open": errOpen, "status": errStatus, "close": errClose} {
			if !errors.Is(err, gitrepo.ErrAuthentication) || strings.Contains(err.Error(), token) {
				t.Errorf("%s: %v, want ErrAuthentication without the token", name, err)
			}
		}
	})

	t.Run("missing repository and pull request", func(t *testing.T) {
		t.Parallel()
		r := srv.CreateRepo(t, "exists")
		g := newGitea(srv, r)
		missing := &forge.Gitea{BaseURL: srv.URL, Owner: r.Owner, Repo: "no-such-repo", Token: srv.Bot.Token}
		_, errOpen := missing.OpenPullRequest(ctx, gitrepo.PullRequest{Head: "h", Base: "main", Title: "t"})
		_, errStatus := missing.PullRequestStatus(ctx, srv.URL+"/ops/no-such-repo/pulls/1")
		_, errNoPull := g.PullRequestStatus(ctx, srv.URL+"/ops/exists/pulls/7")
		errClose := g.ClosePullRequest(ctx, srv.URL+"/ops/exists/pulls/7", "x")
		_, errOther := g.PullRequestStatus(ctx, srv.URL+"/ops/other/pulls/1")
		_, errNoBranch := g.OpenPullRequest(ctx, gitrepo.PullRequest{Head: "no-such-branch", Base: "main", Title: "t"})
		for _, tc := range []struct {
			name string
			err  error
			want error
		}{
			{"open in a missing repository", errOpen, gitrepo.ErrRepositoryNotFound},
			{"status in a missing repository", errStatus, gitrepo.ErrPullRequestNotFound},
			{"status of a missing pull request", errNoPull, gitrepo.ErrPullRequestNotFound},
			{"close of a missing pull request", errClose, gitrepo.ErrPullRequestNotFound},
			{"a pull request of another repository", errOther, gitrepo.ErrNotPullRequestURL},
			{"open from a missing branch", errNoBranch, nil},
		} {
			if tc.err == nil || (tc.want != nil && !errors.Is(tc.err, tc.want)) || strings.Contains(tc.err.Error(), srv.Bot.Token) {
				t.Errorf("%s: %v, want %v", tc.name, tc.err, tc.want)
			}
			if tc.want == nil && errors.Is(tc.err, gitrepo.ErrRepositoryNotFound) {
				t.Errorf("%s: %v, the repository exists", tc.name, tc.err)
			}
		}
	})

	// Branch protection is Gitea's to enforce: a push by the bot to a protected main is
	// refused by the server itself, unless the rule allows the bot.
	for _, tc := range []struct {
		name    string
		rule    gitea.Protection
		refused bool
	}{
		{"nobody may push", gitea.Protection{RequiredApprovals: 1}, true},
		{"another user may push", gitea.Protection{RequiredApprovals: 1, PushAllowed: []string{"ops"}}, true},
		{"the bot may push", gitea.Protection{PushAllowed: []string{"magnum-bot"}}, false},
	} {
		t.Run("protected main: "+tc.name, func(t *testing.T) {
			t.Parallel()
			r := srv.CreateRepo(t, "protected-"+strings.ReplaceAll(tc.name, " ", "-"))
			r.Protect("main", tc.rule)
			w := cloneRepo(t, r)
			before := r.BranchHead("main")
			id := w.commit("local", map[string]string{"direct.yaml": "pushed to main\n"})
			out, err := w.run("push", "origin", "HEAD:refs/heads/main")
			after := r.BranchHead("main")
			switch {
			case tc.refused && (err == nil || after != before || !strings.Contains(out, "protected")):
				t.Errorf("push to main: %v, main %s → %s: %s", err, before, after, out)
			case !tc.refused && (err != nil || after != id):
				t.Errorf("push to main by the allowed bot: %v, main at %s, want %s: %s", err, after, id, out)
			}
		})
	}
}

// ancestor tells whether commit a is in the history of b, both fetched from origin.
func (w *workTree) ancestor(a, b string) bool {
	w.t.Helper()
	w.git("fetch", "-q", "origin")
	_, err := w.run("merge-base", "--is-ancestor", a, b)
	return err == nil
}

// comments lists pull request n's comments as "login: body".
func comments(t *testing.T, srv *gitea.Server, r *gitea.Repo, n int) []string {
	t.Helper()
	var cs []struct {
		Body string `json:"body"`
		User struct {
			Login string `json:"login"`
		} `json:"user"`
	}
	if err := srv.Call(srv.Ops, http.MethodGet, fmt.Sprintf("/repos/%s/%s/issues/%d/comments", r.Owner, r.Name, n), nil, &cs); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range cs {
		out = append(out, c.User.Login+": "+c.Body)
	}
	return out
}
