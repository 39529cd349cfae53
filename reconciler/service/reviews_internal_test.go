package service

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/gitrepo"
	"github.com/magnum-gitops/magnum-gitops/gitrepo/forge"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv/gitea"
	"github.com/magnum-gitops/magnum-gitops/reconciler"
	"github.com/magnum-gitops/magnum-gitops/status"
)

// reviewFixture is a real Gitea repository serve pushes review branches to as its bot.
type reviewFixture struct {
	repo  *gitea.Repo
	forge *forge.Gitea
	git   *gitrepo.Repo
}

func newReviewFixture(t *testing.T) *reviewFixture {
	srv := gitea.Start(t)
	repo := srv.CreateRepo(t, "clusters")
	f := &reviewFixture{repo: repo, forge: &forge.Gitea{BaseURL: srv.URL, Owner: repo.Owner, Repo: repo.Name, Token: repo.Bot.Token}}
	var err error
	f.git, err = gitrepo.Open(context.Background(), gitrepo.Options{URL: repo.CloneURL, Branch: "main",
		Auth:         gitrepo.Auth{Username: repo.Bot.Name, Password: repo.Bot.Token},
		Author:       gitrepo.Signature{Name: "magnum-gitops", Email: "magnum-gitops@example.org"},
		PullRequests: f.forge})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// propose pushes a review branch and returns its pull request's URL and number.
func (f *reviewFixture) propose(t *testing.T, branch string) (string, int) {
	t.Helper()
	res, err := f.git.Apply(context.Background(), gitrepo.Change{Subject: "magnum: " + branch, Branch: branch,
		Files: map[string][]byte{branch + "/helmrelease.yaml": []byte("kind: HelmRelease\n")}})
	if err != nil || res.PullRequestURL == "" {
		t.Fatalf("pushing %s: %v (pull request %q)", branch, err, res.PullRequestURL)
	}
	n, err := strconv.Atoi(path.Base(res.PullRequestURL))
	if err != nil {
		t.Fatal(err)
	}
	return res.PullRequestURL, n
}

func recordFor(uuid, eventID, pr string) reconciler.ClusterRecord {
	return reconciler.ClusterRecord{PullRequest: pr,
		Event: &v1alpha1.ClusterEvent{ID: eventID, Operation: v1alpha1.UpdateCluster, Cluster: v1alpha1.Cluster{UUID: uuid}}}
}

// TestReviews: the state of a cluster's pull request as Gitea reports it, trusted for the
// interval and read again after; a merge seen once calls merged once; a pull request
// replaced by a newer one of the same cluster is closed with a comment naming the newer,
// and another cluster's is left alone.
func TestReviews(t *testing.T) {
	t.Parallel()
	f := newReviewFixture(t)
	ctx := context.Background()
	var merged atomic.Int32
	rv := newReviews(ReviewOptions{Forge: f.forge, Interval: time.Hour}, slog.New(slog.DiscardHandler),
		func(context.Context) { merged.Add(1) })

	url, n := f.propose(t, "magnum/a/1")
	rec := recordFor("a", "1", url)
	if got := rv.review(ctx, rec); got.State != status.ReviewOpen || got.URL != url {
		t.Fatalf("a new pull request: %+v", got)
	}
	f.repo.Merge(n, gitea.Squash, "")
	if got := rv.review(ctx, rec); got.State != status.ReviewOpen {
		t.Errorf("within the interval the state is the one read: %+v", got)
	}
	if got := rv.refresh(ctx, url); got.State != status.ReviewMerged || got.By != f.repo.Actor.Name {
		t.Errorf("after the merge: %+v, want merged by %s", got, f.repo.Actor.Name)
	}
	rv.refresh(ctx, url)
	waitFor(t, func() bool { return merged.Load() == 1 })
	time.Sleep(100 * time.Millisecond)
	if n := merged.Load(); n != 1 {
		t.Errorf("merged called %d times, want once", n)
	}
	if got := rv.review(ctx, reconciler.ClusterRecord{Event: rec.Event}); got != (status.Review{}) {
		t.Errorf("no pull request: %+v", got)
	}

	// Superseded: cluster b's first pull request is closed once its second is seen; d's
	// once an event that needed no pull request (a delete of what main never held) is its
	// last; c's stays open.
	old, oldN := f.propose(t, "magnum/b/1")
	other, _ := f.propose(t, "magnum/c/1")
	created, _ := f.propose(t, "magnum/d/1")
	newer, _ := f.propose(t, "magnum/b/2")
	b := recordFor("b", "2", newer)
	b.Superseded = []string{old}
	d := recordFor("d", "2", "")
	d.Superseded = []string{created}
	rv.supersede(ctx, []reconciler.ClusterRecord{b, recordFor("c", "1", other), d})
	rv.supersede(ctx, []reconciler.ClusterRecord{b, recordFor("c", "1", other), d}) // settled: nothing more
	for _, tc := range []struct {
		url  string
		want string
	}{{old, status.ReviewClosed}, {newer, status.ReviewOpen}, {other, status.ReviewOpen}, {created, status.ReviewClosed}} {
		if got := rv.refresh(ctx, tc.url); got.State != tc.want {
			t.Errorf("%s: %s, want %s", tc.url, got.State, tc.want)
		}
	}
	var comments []struct {
		Body string `json:"body"`
	}
	if err := f.repo.Server().Call(f.repo.Bot, http.MethodGet, "/repos/"+f.repo.Owner+"/"+f.repo.Name+"/issues/"+strconv.Itoa(oldN)+"/comments", nil, &comments); err != nil {
		t.Fatal(err)
	}
	if len(comments) != 1 || !strings.Contains(comments[0].Body, "Superseded by "+newer) {
		t.Errorf("comments on the superseded pull request: %+v", comments)
	}
}

// TestReviewWebhook: Gitea's own delivery, signed with the secret, makes serve read the
// pull request again at once; a delivery with a wrong signature is refused (401) and
// changes nothing; a replayed delivery is answered without asking the forge.
func TestReviewWebhook(t *testing.T) {
	t.Parallel()
	f := newReviewFixture(t)
	ctx := context.Background()
	secret := []byte("webhook-secret")
	var deliveries atomic.Int32
	var s *Service
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		deliveries.Add(1)
		s.reviewWebhook(w, r)
	}))
	t.Cleanup(hook.Close)
	merged := make(chan struct{}, 1)
	s = &Service{o: Options{Log: slog.New(slog.DiscardHandler)}}
	s.reviews = newReviews(ReviewOptions{Forge: f.forge, Interval: time.Hour,
		Webhook: func(h map[string][]string, body []byte) (string, string, error) {
			ev, err := forge.ParseGiteaWebhook(secret, http.Header(h), body)
			return ev.URL, ev.Delivery, err
		}}, s.o.Log, func(context.Context) { merged <- struct{}{} })
	f.repo.AddWebhook(hook.URL, string(secret))

	url, n := f.propose(t, "magnum/a/1")
	if got := s.reviews.review(ctx, recordFor("a", "1", url)); got.State != status.ReviewOpen {
		t.Fatalf("a new pull request: %+v", got)
	}
	f.repo.Merge(n, gitea.MergeCommit, "")
	select {
	case <-merged:
	case <-time.After(time.Minute):
		t.Fatalf("no merge seen after Gitea's delivery (%d deliveries)", deliveries.Load())
	}
	if got := s.reviews.review(ctx, recordFor("a", "1", url)); got.State != status.ReviewMerged {
		t.Errorf("after the delivery, within the interval: %+v", got)
	}

	// A forged delivery: the body of a close, signed with another secret.
	body := `{"action":"closed","number":` + strconv.Itoa(n) + `,"pull_request":{"html_url":"` + url + `","merged":false}}`
	for _, tc := range []struct {
		name      string
		signature string
		want      int
	}{
		{"wrong secret", "0000", http.StatusUnauthorized},
		{"no signature", "", http.StatusUnauthorized},
	} {
		req, _ := http.NewRequest(http.MethodPost, hook.URL, strings.NewReader(body))
		req.Header.Set("X-Gitea-Event", "pull_request")
		req.Header.Set("X-Gitea-Delivery", "forged-"+tc.name)
		if tc.signature != "" {
			req.Header.Set("X-Gitea-Signature", tc.signature)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s: HTTP %d, want %d", tc.name, resp.StatusCode, tc.want)
		}
	}
	if got := s.reviews.review(ctx, recordFor("a", "1", url)); got.State != status.ReviewMerged {
		t.Errorf("after forged deliveries: %+v", got)
	}
}

func TestDeliveries(t *testing.T) {
	t.Parallel()
	var d deliveries
	if !d.first("a") || d.first("a") || !d.first("") || !d.first("") {
		t.Fatal("a delivery is first once; one without an id always")
	}
	for i := range 1024 {
		d.first(strconv.Itoa(i))
	}
	if !d.first("a") {
		t.Error("the oldest of 1,025 deliveries is forgotten")
	}
	if d.first("1023") {
		t.Error("a recent delivery is remembered")
	}
}

func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !ok(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
	}
}

// TestReviewsPrune: past maxReviews pull requests, those found merged or closed are
// forgotten and the open ones kept; the settled superseded ones are forgotten at once.
func TestReviewsPrune(t *testing.T) {
	t.Parallel()
	rv := newReviews(ReviewOptions{Forge: &forge.Gitea{}}, slog.New(slog.DiscardHandler), nil)
	states := []string{status.ReviewOpen, status.ReviewMerged, status.ReviewClosed}
	for i := range maxReviews + 1 {
		url := "https://gitea.example.org/o/r/pulls/" + strconv.Itoa(i)
		rv.states[url] = reviewState{Review: status.Review{URL: url, State: states[i%3]}}
		rv.settled[url] = true
	}
	rv.prune()
	for url, st := range rv.states {
		if st.State != status.ReviewOpen {
			t.Fatalf("%s (%s) kept", url, st.State)
		}
	}
	if n := len(rv.states); n != (maxReviews+1+2)/3 {
		t.Errorf("%d open pull requests kept, want %d", n, (maxReviews+1+2)/3)
	}
	if len(rv.settled) != 0 {
		t.Errorf("%d settled kept", len(rv.settled))
	}
}
