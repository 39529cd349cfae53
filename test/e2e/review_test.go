//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv/gitea"
)

// reviewSetup is review mode on a real Gitea: serve's git section points at the Gitea
// repository, pushes as its bot, and opens and follows pull requests there.
type reviewSetup struct {
	server *gitea.Server
	repo   *gitea.Repo
	// webhookSecret signs Gitea's deliveries to serve's POST /hooks/pull-requests.
	webhookSecret string
}

// withGiteaReview runs the harness on a Gitea repository, in review mode.
func withGiteaReview(r *reviewSetup) harnessOption {
	return func(h *harness) {
		h.review = r
		h.gitURL, h.gitPassword, h.gitDir = r.repo.CloneURL, r.repo.Bot.Token, r.repo.Dir()
	}
}

// gitUsername is who serve and Flux authenticate to the Git server as.
func (h *harness) gitUsername() string {
	if h.review != nil {
		return h.review.repo.Bot.Name
	}
	return gitUser
}

// config is serve's git.review section, as an operator writes it for Gitea.
func (r *reviewSetup) config(t *testing.T, dir string) map[string]any {
	token := filepath.Join(dir, "gitea-token")
	secret := filepath.Join(dir, "gitea-webhook-secret")
	if err := os.WriteFile(token, []byte(r.repo.Bot.Token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(secret, []byte(r.webhookSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return map[string]any{
		"branch_template": "magnum/{{.StackID}}/{{.EventID}}",
		"poll_interval":   "5s",
		"gitea": map[string]any{"url": r.server.URL, "owner": r.repo.Owner, "repo": r.repo.Name,
			"token_file": token, "webhook_secret_file": secret},
	}
}

// seed gives the Gitea repository's main the Flux path (the harness's seed), pushed as ops
// before main is protected.
func (r *reviewSetup) seed(t *testing.T) {
	dir := t.TempDir()
	u := strings.Replace(r.repo.CloneURL, "://", "://"+r.server.Ops.Name+":"+r.server.Ops.Token+"@", 1)
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=ops", "GIT_AUTHOR_EMAIL=ops@example.org",
			"GIT_COMMITTER_NAME=ops", "GIT_COMMITTER_EMAIL=ops@example.org")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", args[0], err, out)
		}
	}
	run("clone", "-q", u, ".")
	os.MkdirAll(filepath.Join(dir, fluxPath), 0o755)
	os.WriteFile(filepath.Join(dir, fluxPath, "README.md"), []byte("Written by magnum-gitops.\n"), 0o644)
	run("add", ".")
	run("commit", "-q", "-m", "the Flux path")
	run("push", "-q", "origin", "HEAD:main")
}

// TestE2EReview drives one cluster's life through review mode on a real Gitea, the real
// Flux and Cluster API controllers: every change waits in a pull request (Magnum sees
// *_IN_PROGRESS naming it), main is protected (one approval, nobody pushes), and each merge
// style reaches *_COMPLETE; a pull request closed without merge fails the operation and
// leaves main alone; a delete is reviewed in each of its phases.
func TestE2EReview(t *testing.T) {
	b := findBinaries(t)
	srv := gitea.Start(t)
	rv := &reviewSetup{server: srv, repo: srv.CreateRepo(t, "magnum-clusters"), webhookSecret: randomToken()}
	rv.seed(t)
	// Review mode's promise: main moves by reviewed merges alone, and Gitea enforces it.
	rv.repo.Protect("main", gitea.Protection{RequiredApprovals: 1})
	h := newHarness(t, b, true, withClusterAPI(3*time.Second), withGiteaReview(rv))
	rv.repo.AddWebhook(h.serveURL+"/hooks/pull-requests", rv.webhookSecret)

	events := filepath.Join(testenv.RepoRoot(), "fixtures", "events")
	a, _, _ := twoClusters(t)
	uuid := getPath(a.event, "cluster", "uuid").(string)

	// propose posts an event and checks what review mode promises before any merge: a
	// pull request, main untouched, Magnum told what it waits for.
	propose := func(name, eventFile, inProgress string) (pr int, url string) {
		t.Helper()
		before := rv.repo.BranchHead("main")
		t0 := time.Now()
		ans := h.postEvent(eventFile)
		opened := time.Since(t0)
		if ans.Outcome != "committed" || ans.PullRequest == "" {
			t.Fatalf("%s: outcome %q, pull request %q (%s): want a pull request", name, ans.Outcome, ans.PullRequest, ans.Message)
		}
		if after := rv.repo.BranchHead("main"); after != before {
			t.Fatalf("%s: main moved from %s to %s before any review", name, before, after)
		}
		n, err := strconv.Atoi(path.Base(ans.PullRequest))
		if err != nil {
			t.Fatalf("%s: pull request URL %q: %v", name, ans.PullRequest, err)
		}
		h.waitFor(name+": Magnum told the change waits for review", time.Minute, func() (bool, string) {
			s := h.serveStatusOf(uuid)
			return s.Status == inProgress && strings.Contains(s.StatusReason, "waiting for review of pull request "+ans.PullRequest),
				s.Status + ": " + s.StatusReason
		})
		t.Logf("%s: pull request %s opened %s after the event, main untouched", name, ans.PullRequest, opened.Round(time.Millisecond))
		return n, ans.PullRequest
	}
	// merge approves and merges a pull request with a style and waits until serve reports
	// want with CAPI done.
	merge := func(name string, pr int, style gitea.MergeStyle, message, want string, done func() (bool, string)) {
		t.Helper()
		rv.repo.Approve(pr)
		rv.repo.Merge(pr, style, message)
		merged := time.Now()
		applied := h.waitApplied(rv.repo.BranchHead("main"), 3*time.Minute).Sub(merged)
		_, magnum, _ := h.waitCAPIAndStatus(uuid, a.namespace, a.release, want, done, merged, nil)
		t.Logf("figures: %-16s merged (%-6s) → applied by Flux %6s → Magnum %s %6s", name, style,
			applied.Round(time.Millisecond), want, magnum.Round(time.Second))
	}

	// Gitea refuses what review mode must never do: a merge without approval, a push to main.
	createPR, _ := propose("create", writeEvent(t, t.TempDir(), "create.yaml", withMagnumCAs(t, a.event)), "CREATE_IN_PROGRESS")
	if err := rv.repo.TryMerge(createPR, gitea.MergeCommit, ""); err == nil {
		t.Fatal("Gitea merged a pull request without the approval main's protection requires")
	}
	merge("create", createPR, gitea.MergeCommit, "", "CREATE_COMPLETE",
		h.capiSettled(a.namespace, a.release, 3, map[string]int64{"default-worker": 3}))

	// A squash with an edited message: neither the commit serve pushed nor its trailers
	// reach main, only the tree.
	resizePR, _ := propose("resize", filepath.Join(events, "02-prod-a-resize-workers.yaml"), "UPDATE_IN_PROGRESS")
	// What the reviewer reads: the cluster, project and operation in the title; the values
	// that move, and the Magnum event, in the body.
	var pull struct {
		Title string `json:"title"`
		Body  string `json:"body"`
	}
	if err := srv.Call(srv.Reviewer, "GET", "/repos/"+rv.repo.Owner+"/"+rv.repo.Name+"/pulls/"+strconv.Itoa(resizePR), nil, &pull); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"magnum: resize cluster prod-a (" + a.release + ") in project "} {
		if !strings.HasPrefix(pull.Title, want) {
			t.Errorf("pull request title %q, want it to start %q", pull.Title, want)
		}
	}
	for _, want := range []string{"node group default-worker: 3 × m1.medium → 5 × m1.medium", "Magnum-Operation: resize_cluster",
		"Magnum-Event-ID: evt-02-resize-cluster", "Magnum-Cluster-UUID: " + uuid} {
		if !strings.Contains(pull.Body, want) {
			t.Errorf("pull request body lacks %q:\n%s", want, pull.Body)
		}
	}
	merge("resize", resizePR, gitea.Squash, "Resize prod-a's workers to 5", "UPDATE_COMPLETE",
		h.capiSettled(a.namespace, a.release, 3, map[string]int64{"default-worker": 5}))

	// Closed without merge: UPDATE_FAILED naming the pull request and who closed it, and
	// nothing of the change on main.
	ngPR, ngURL := propose("nodegroup create", filepath.Join(events, "03-prod-a-create-nodegroup.yaml"), "UPDATE_IN_PROGRESS")
	mainBefore := rv.repo.BranchHead("main")
	rv.repo.Close(ngPR)
	h.waitFor("the refused change to fail", time.Minute, func() (bool, string) {
		s := h.serveStatusOf(uuid)
		return s.Status == "UPDATE_FAILED" && strings.Contains(s.StatusReason, ngURL+" was closed without merge by "+rv.repo.Actor.Name),
			s.Status + ": " + s.StatusReason
	})
	if after := rv.repo.BranchHead("main"); after != mainBefore {
		t.Errorf("closing pull request %d moved main from %s to %s", ngPR, mainBefore, after)
	}
	for _, f := range h.gitFiles(a.dir()) {
		if strings.Contains(f, "gpu-a100") {
			t.Errorf("the closed change reached main: %s", f)
		}
	}

	// A rebase merge: new commit ids, the branch's messages.
	upgradePR, _ := propose("upgrade", filepath.Join(events, "06-prod-a-upgrade.yaml"), "UPDATE_IN_PROGRESS")
	merge("upgrade", upgradePR, gitea.Rebase, "", "UPDATE_COMPLETE",
		h.capiRolledTo(a.namespace, a.release, "v1.34.3", 3, map[string]int64{"default-worker": 5}))

	// Delete: the delete_cluster pull request, then serve's own steps (the Secrets, then the
	// directory, leaving Git), each a pull request of its own that the reviewer merges.
	del := deleteOf(readEvent(t, filepath.Join(events, "06-prod-a-upgrade.yaml")), "evt-e2e-review-delete")
	delPR, _ := propose("delete", writeEvent(t, t.TempDir(), "delete.yaml", del), "DELETE_IN_PROGRESS")
	merge("delete", delPR, gitea.MergeCommit, "", "DELETE_COMPLETE", h.capiGone(a))
	steps := 0
	h.waitFor("serve's delete steps reviewed and the cluster's directory gone from main", 5*time.Minute, func() (bool, string) {
		for _, p := range h.openPullRequests() {
			if !strings.HasPrefix(p.Head.Ref, "magnum/"+a.release+"/evt-e2e-review-delete-delete-") {
				t.Fatalf("an unexpected pull request is open: %s (%s)", p.HTMLURL, p.Head.Ref)
			}
			rv.repo.Approve(p.Number)
			rv.repo.Merge(p.Number, gitea.MergeCommit, "")
			steps++
		}
		files := h.gitFiles(a.dir())
		return len(files) == 0, fmt.Sprintf("%d steps merged, %d files left on main: %v", steps, len(files), files)
	})
	if steps != 2 {
		t.Errorf("the delete took %d pull requests of serve's own, want 2 (the Secrets, then the directory)", steps)
	}
	h.waitFor("nothing of the cluster left in the API server", 3*time.Minute, h.namespaceEmpty(a.namespace))
	if s := h.serveStatusOf(uuid); s.Status != "DELETE_COMPLETE" {
		t.Errorf("after the delete's steps, serve reports %s (%s), want DELETE_COMPLETE", s.Status, s.StatusReason)
	}
	// Every commit on main came through a merge by the reviewer: none is the bot's push.
	if out := h.git(h.gitDir, "log", "--first-parent", "--format=%cn", "main"); strings.Contains(out, rv.repo.Bot.Name) {
		t.Errorf("the bot committed to main directly:\n%s", out)
	}
}

// giteaPull is the part of Gitea's pull request object the test reads.
type giteaPull struct {
	Number  int    `json:"number"`
	HTMLURL string `json:"html_url"`
	Head    struct {
		Ref string `json:"ref"`
	} `json:"head"`
}

// openPullRequests lists the review repository's open pull requests.
func (h *harness) openPullRequests() []giteaPull {
	r := h.review
	var out []giteaPull
	if err := r.server.Call(r.server.Ops, "GET", "/repos/"+r.repo.Owner+"/"+r.repo.Name+"/pulls?state=open", nil, &out); err != nil {
		h.t.Fatal(err)
	}
	return out
}

// TestE2EReviewConcurrent: pull requests of review mode that wait side by side, on a real
// Gitea and the real Flux controllers: two clusters' creates merged in the opposite order
// of their events both reach their HelmRelease; a delete that comes while a cluster's create
// still waits for review supersedes it (serve closes the create's pull request with a
// comment) and completes at once, main never having held the cluster.
func TestE2EReviewConcurrent(t *testing.T) {
	b := findBinaries(t)
	srv := gitea.Start(t)
	rv := &reviewSetup{server: srv, repo: srv.CreateRepo(t, "magnum-clusters"), webhookSecret: randomToken()}
	rv.seed(t)
	rv.repo.Protect("main", gitea.Protection{RequiredApprovals: 1})
	h := newHarness(t, b, true, withGiteaReview(rv))
	rv.repo.AddWebhook(h.serveURL+"/hooks/pull-requests", rv.webhookSecret)
	dir := t.TempDir()
	a, o, ovn := twoClusters(t)

	proposed := func(eventFile string) (int, string) {
		t.Helper()
		ans := h.postEvent(eventFile)
		if ans.Outcome != "committed" || ans.PullRequest == "" {
			t.Fatalf("%s: outcome %q, pull request %q (%s)", filepath.Base(eventFile), ans.Outcome, ans.PullRequest, ans.Message)
		}
		n, err := strconv.Atoi(path.Base(ans.PullRequest))
		if err != nil {
			t.Fatal(err)
		}
		return n, ans.PullRequest
	}
	aPR, aURL := proposed(writeEvent(t, dir, "a.yaml", a.event))
	oPR, _ := proposed(writeEvent(t, dir, "o.yaml", ovn))
	// The later event's pull request first, then the earlier's: both land, neither undoes
	// the other (each touches its own cluster's directory).
	for _, pr := range []int{oPR, aPR} {
		rv.repo.Approve(pr)
		rv.repo.Merge(pr, gitea.Squash, "")
	}
	h.waitFor("both HelmReleases Ready", defaultWaitStep, func() (bool, string) {
		okA, whyA := h.releaseReady(a)()
		okO, whyO := h.releaseReady(o)()
		return okA && okO, whyA + "; " + whyO
	})
	uuidA := getPath(a.event, "cluster", "uuid").(string)
	if s := h.serveStatusOf(uuidA); strings.Contains(s.StatusReason, aURL) {
		t.Errorf("after its merge, prod-a still waits on its pull request: %s %q", s.Status, s.StatusReason)
	}

	// A third cluster, created and deleted before anyone reviewed the create.
	c := deepCopy(a.event).(map[string]any)
	c["id"] = "evt-e2e-review-c-create"
	setPath(c, "5d1e2f3a-4b5c-4d6e-8f70-81a2b3c4d5e6", "cluster", "uuid")
	setPath(c, "prod-c", "cluster", "name")
	setPath(c, "prod-c-7h2k9m4pq8xz", "cluster", "stack_id")
	cPR, cURL := proposed(writeEvent(t, dir, "c.yaml", c))
	del := deleteOf(c, "evt-e2e-review-c-delete")
	if ans := h.postEvent(writeEvent(t, dir, "c-delete.yaml", del)); ans.PullRequest != "" {
		t.Errorf("the delete of a cluster main never held opened pull request %s (outcome %s)", ans.PullRequest, ans.Outcome)
	}
	h.waitFor("serve to close the superseded create", time.Minute, func() (bool, string) {
		var p struct {
			State string `json:"state"`
		}
		if err := srv.Call(srv.Ops, "GET", "/repos/"+rv.repo.Owner+"/"+rv.repo.Name+"/pulls/"+strconv.Itoa(cPR), nil, &p); err != nil {
			t.Fatal(err)
		}
		return p.State == "closed", cURL + " is " + p.State
	})
	var comments []struct {
		Body string `json:"body"`
	}
	if err := srv.Call(srv.Ops, "GET", "/repos/"+rv.repo.Owner+"/"+rv.repo.Name+"/issues/"+strconv.Itoa(cPR)+"/comments", nil, &comments); err != nil {
		t.Fatal(err)
	}
	if len(comments) != 1 || !strings.Contains(comments[0].Body, "Superseded by Magnum event evt-e2e-review-c-delete") {
		t.Errorf("the superseded pull request's comments: %+v", comments)
	}
	h.waitFor("prod-c's delete complete", time.Minute, func() (bool, string) {
		s := h.serveStatusOf("5d1e2f3a-4b5c-4d6e-8f70-81a2b3c4d5e6")
		return s.Status == "DELETE_COMPLETE", s.Status + ": " + s.StatusReason
	})
	if files := h.gitFiles(fluxPath); strings.Contains(strings.Join(files, " "), "prod-c") {
		t.Errorf("prod-c reached main: %v", files)
	}
}
