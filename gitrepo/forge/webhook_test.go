package forge_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/magnum-gitops/magnum-gitops/gitrepo"
	"github.com/magnum-gitops/magnum-gitops/gitrepo/forge"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv/gitea"
)

// delivery is one webhook request as the receiver got it.
type delivery struct {
	header http.Header
	body   []byte
}

// TestParseGiteaWebhook registers a webhook on a real Gitea and checks that its own
// deliveries for a pull request opened, merged, and closed without merge (by a reviewer,
// and by the bot's ClosePullRequest) parse to what happened, that the events review mode
// does not track are ignored, and that a tampered body or another secret is refused.
func TestParseGiteaWebhook(t *testing.T) {
	t.Parallel()
	srv := gitea.Start(t)
	secret := []byte("webhook-secret-8f3a2c")
	got := make(chan delivery, 100)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Error(err)
		}
		got <- delivery{header: r.Header.Clone(), body: body}
	}))
	defer receiver.Close()

	r := srv.CreateRepo(t, "hooks")
	r.AddWebhook(receiver.URL, string(secret))
	w := cloneRepo(t, r)
	g := newGitea(srv, r)
	merged, _ := openPull(t, srv, r, w, "magnum/prod-a/evt-1")
	r.Approve(1)
	r.Merge(1, gitea.Squash, "reviewed")
	main := r.BranchHead("main")
	rejected, _ := openPull(t, srv, r, w, "magnum/prod-b/evt-2")
	r.As(srv.Ops).Close(2)
	superseded, _ := openPull(t, srv, r, w, "magnum/prod-c/evt-3")
	if err := g.ClosePullRequest(context.Background(), superseded, "superseded"); err != nil {
		t.Fatal(err)
	}

	// Gitea delivers in the background: wait for the three closes.
	events := map[string]forge.PullRequestEvent{} // by "number action"
	ignored := map[string]bool{}                  // by X-Gitea-Event
	deliveries := map[string]bool{}
	var mergedDelivery delivery
	deadline := time.After(60 * time.Second)
	for events["1 closed"].URL == "" || events["2 closed"].URL == "" || events["3 closed"].URL == "" {
		var d delivery
		select {
		case d = <-got:
		case <-deadline:
			t.Fatalf("deliveries so far: %v; ignored: %v", events, ignored)
		}
		e, err := forge.ParseGiteaWebhook(secret, d.header, d.body)
		switch {
		case errors.Is(err, forge.ErrWebhookIgnored):
			ignored[d.header.Get("X-Gitea-Event")] = true
			continue
		case err != nil:
			t.Fatalf("Gitea's own delivery (%s) refused: %v", d.header.Get("X-Gitea-Event"), err)
		}
		if e.Delivery == "" || e.Delivery != d.header.Get("X-Gitea-Delivery") || deliveries[e.Delivery] {
			t.Errorf("delivery id %q (header %q), seen before: %v", e.Delivery, d.header.Get("X-Gitea-Delivery"), deliveries[e.Delivery])
		}
		deliveries[e.Delivery] = true
		key := fmt.Sprintf("%d %s", e.Number, e.Action)
		if key == "1 closed" {
			mergedDelivery = d
		}
		e.Delivery = ""
		events[key] = e
	}
	for _, tc := range []struct {
		key   string
		want  forge.PullRequestEvent
		state gitrepo.PullRequestState
	}{
		{"1 opened", forge.PullRequestEvent{Action: "opened", URL: merged, Number: 1, By: srv.Bot.Name}, gitrepo.PullRequestOpen},
		{"1 closed", forge.PullRequestEvent{Action: "closed", URL: merged, Number: 1, Merged: true, By: srv.Reviewer.Name, MergeCommit: main}, gitrepo.PullRequestMerged},
		{"2 closed", forge.PullRequestEvent{Action: "closed", URL: rejected, Number: 2, By: srv.Ops.Name}, gitrepo.PullRequestClosed},
		{"3 closed", forge.PullRequestEvent{Action: "closed", URL: superseded, Number: 3, By: srv.Bot.Name}, gitrepo.PullRequestClosed},
	} {
		if e := events[tc.key]; e != tc.want || e.State() != tc.state {
			t.Errorf("%s: %+v (%s), want %+v (%s)", tc.key, e, e.State(), tc.want, tc.state)
		}
	}
	// The approval and the bot's comment came as other events, ignored.
	if !ignored["pull_request_approved"] || !ignored["issue_comment"] {
		t.Errorf("ignored events: %v, want pull_request_approved and issue_comment among them", ignored)
	}

	// Gitea's signature holds for this body and this secret only.
	d := mergedDelivery
	for _, tc := range []struct {
		name   string
		secret []byte
		header http.Header
		body   []byte
	}{
		{"body with a space added", secret, d.header, append(bytes.Clone(d.body), ' ')},
		{"merger replaced", secret, d.header, bytes.ReplaceAll(d.body, []byte(`"`+srv.Reviewer.Name+`"`), []byte(`"mallory"`))},
		{"another secret", []byte("not-the-secret"), d.header, d.body},
		{"no secret configured", nil, d.header, d.body},
		{"no signature", secret, without(d.header, "X-Gitea-Signature"), d.body},
	} {
		if _, err := forge.ParseGiteaWebhook(tc.secret, tc.header, tc.body); !errors.Is(err, forge.ErrWebhookSignature) {
			t.Errorf("%s: %v, want ErrWebhookSignature", tc.name, err)
		}
	}
}

func without(h http.Header, key string) http.Header {
	c := h.Clone()
	c.Del(key)
	return c
}

// TestParseGitHubWebhookDocumentedSignature checks the signature against the example in
// GitHub's "Validating webhook deliveries": secret "It's a Secret to Everybody", payload
// "Hello, World!", signature sha256=757107ea.... A ping passes the check, then is ignored.
func TestParseGitHubWebhookDocumentedSignature(t *testing.T) {
	t.Parallel()
	secret := []byte("It's a Secret to Everybody")
	body := []byte("Hello, World!")
	for _, tc := range []struct {
		sig  string
		want error
	}{
		{"sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17", forge.ErrWebhookIgnored},
		{"sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e18", forge.ErrWebhookSignature},
		{"757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17", forge.ErrWebhookSignature},
		{"sha256=", forge.ErrWebhookSignature},
		{"sha256=not-hex", forge.ErrWebhookSignature},
		{"", forge.ErrWebhookSignature},
	} {
		h := http.Header{"X-Github-Event": {"ping"}, "X-Github-Delivery": {"72d3162e-cc78-11e3-81ab-4c9367dc0958"}}
		if tc.sig != "" {
			h.Set("X-Hub-Signature-256", tc.sig)
		}
		if _, err := forge.ParseGitHubWebhook(secret, h, body); !errors.Is(err, tc.want) {
			t.Errorf("%q: %v, want %v", tc.sig, err, tc.want)
		}
	}
}

// githubPayload is a pull_request delivery in the shape GitHub documents (webhook events
// and payloads, "pull_request"), with the fields review mode reads and some it does not.
func githubPayload(action string, merged bool, mergedBy, sender string) []byte {
	by := "null"
	if mergedBy != "" {
		by = fmt.Sprintf(`{"login":%q,"id":2,"type":"User"}`, mergedBy)
	}
	return fmt.Appendf(nil, `{"action":%q,"number":7,"pull_request":{"url":"https://api.github.com/repos/octo/clusters/pulls/7","id":1007,"html_url":"https://github.com/octo/clusters/pull/7","number":7,"state":%q,"title":"magnum: resize prod-a","merged":%v,"merged_by":%s,"merge_commit_sha":"9f3c1b2a4d5e4f6a8b7c6d5e4f3a2b1c0d9e8f7a","head":{"ref":"magnum/prod-a/evt-7","sha":"6dcb09b5b57875f334f61aebed695e2e4193db5e"},"base":{"ref":"main"}},"repository":{"full_name":"octo/clusters"},"sender":{"login":%q,"id":3,"type":"User"}}`,
		action, map[bool]string{true: "closed", false: "open"}[action == "closed"], merged, by, sender)
}

// signGitHub signs body as GitHub documents: "sha256=" and the hex HMAC-SHA256 under the
// secret.
func signGitHub(secret, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

func TestParseGitHubWebhook(t *testing.T) {
	t.Parallel()
	secret := []byte("gh-webhook-secret")
	const url = "https://github.com/octo/clusters/pull/7"
	for _, tc := range []struct {
		name  string
		event string
		body  []byte
		want  forge.PullRequestEvent
		state gitrepo.PullRequestState
		err   error
	}{
		{"merged", "pull_request", githubPayload("closed", true, "reviewer", "reviewer"),
			forge.PullRequestEvent{Action: "closed", URL: url, Number: 7, Merged: true, By: "reviewer", MergeCommit: "9f3c1b2a4d5e4f6a8b7c6d5e4f3a2b1c0d9e8f7a"}, gitrepo.PullRequestMerged, nil},
		{"closed without merge", "pull_request", githubPayload("closed", false, "", "ops"),
			forge.PullRequestEvent{Action: "closed", URL: url, Number: 7, By: "ops"}, gitrepo.PullRequestClosed, nil},
		// While open, merge_commit_sha is GitHub's test merge: not a merge commit.
		{"opened", "pull_request", githubPayload("opened", false, "", "magnum-bot"),
			forge.PullRequestEvent{Action: "opened", URL: url, Number: 7, By: "magnum-bot"}, gitrepo.PullRequestOpen, nil},
		{"reopened", "pull_request", githubPayload("reopened", false, "", "ops"),
			forge.PullRequestEvent{Action: "reopened", URL: url, Number: 7, By: "ops"}, gitrepo.PullRequestOpen, nil},
		{"pushed to", "pull_request", githubPayload("synchronize", false, "", "magnum-bot"), forge.PullRequestEvent{}, "", forge.ErrWebhookIgnored},
		{"labelled", "pull_request", githubPayload("labeled", false, "", "ops"), forge.PullRequestEvent{}, "", forge.ErrWebhookIgnored},
		{"a review", "pull_request_review", githubPayload("submitted", false, "", "reviewer"), forge.PullRequestEvent{}, "", forge.ErrWebhookIgnored},
		{"a push", "push", []byte(`{"ref":"refs/heads/main"}`), forge.PullRequestEvent{}, "", forge.ErrWebhookIgnored},
	} {
		h := http.Header{}
		h.Set("X-GitHub-Event", tc.event)
		h.Set("X-GitHub-Delivery", "delivery-"+tc.name)
		h.Set("X-Hub-Signature-256", signGitHub(secret, tc.body))
		e, err := forge.ParseGitHubWebhook(secret, h, tc.body)
		if tc.err != nil {
			if !errors.Is(err, tc.err) {
				t.Errorf("%s: %+v, %v; want %v", tc.name, e, err, tc.err)
			}
			continue
		}
		want := tc.want
		want.Delivery = "delivery-" + tc.name
		if err != nil || e != want || e.State() != tc.state {
			t.Errorf("%s: %+v (%s), %v; want %+v (%s)", tc.name, e, e.State(), err, want, tc.state)
		}
		// The same delivery with a changed body, or under another secret, is refused.
		tampered := bytes.Replace(tc.body, []byte(`"number":7`), []byte(`"number":8`), 1)
		if _, err := forge.ParseGitHubWebhook(secret, h, tampered); !errors.Is(err, forge.ErrWebhookSignature) {
			t.Errorf("%s tampered: %v", tc.name, err)
		}
		// The error names neither secret nor signature.
		_, err = forge.ParseGitHubWebhook([]byte("another-secret"), h, tc.body)
		if !errors.Is(err, forge.ErrWebhookSignature) || strings.Contains(err.Error(), "another-secret") ||
			strings.Contains(err.Error(), strings.TrimPrefix(h.Get("X-Hub-Signature-256"), "sha256=")) {
			t.Errorf("%s under another secret: %v", tc.name, err)
		}
	}
}
