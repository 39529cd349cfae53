package forge

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/magnum-gitops/magnum-gitops/gitrepo"
)

var (
	// ErrWebhookSignature means the delivery's signature is missing, malformed or does not
	// match its body under the secret (or no secret is configured). Refuse it (HTTP 401).
	ErrWebhookSignature = errors.New("forge: webhook signature missing or wrong")
	// ErrWebhookIgnored means a genuine delivery says nothing review mode tracks (another
	// event, or a pull request action that does not change its state). Acknowledge it
	// (HTTP 2xx) so the forge does not retry.
	ErrWebhookIgnored = errors.New("forge: webhook ignored")
)

// PullRequestEvent is a forge's notice that a pull request was opened, reopened or
// closed, merged or not: what lets serve move a cluster's status without polling.
type PullRequestEvent struct {
	// Delivery is the forge's id of the delivery; a redelivery carries the same id.
	Delivery string
	// Action is "opened", "reopened" or "closed" (merged or not).
	Action string
	// URL is the pull request's web URL, as OpenPullRequest returned it.
	URL string
	// Number is the pull request's number in its repository.
	Number int
	// Merged is true when the close was a merge.
	Merged bool
	// By is the login of who merged it, closed it or (re)opened it.
	By string
	// MergeCommit is the commit the merge put on the base; "" unless Merged.
	MergeCommit string
}

// State is the pull request's state after the event.
func (e PullRequestEvent) State() gitrepo.PullRequestState {
	switch {
	case e.Merged:
		return gitrepo.PullRequestMerged
	case e.Action == "closed":
		return gitrepo.PullRequestClosed
	}
	return gitrepo.PullRequestOpen
}

// trackedActions are the pull_request actions that change a pull request's state. Both
// forges use these names (their other actions differ: "synchronized" against
// "synchronize", and so on, and are ignored).
var trackedActions = map[string]bool{"opened": true, "reopened": true, "closed": true}

// ParseGiteaWebhook verifies a Gitea (or Forgejo) webhook delivery and reads its pull
// request event. X-Gitea-Signature must be the hex HMAC-SHA256 of the body under secret,
// compared in constant time; the signature is checked before anything else is read. It
// returns ErrWebhookSignature for a missing or wrong signature, ErrWebhookIgnored for
// another event (X-Gitea-Event other than pull_request: reviews, comments) or an action
// that changes no state.
//
// A valid delivery may be replayed by whoever captured it: remembering the Delivery ids
// already handled (and ignoring a repeat) is the caller's job, not this function's.
func ParseGiteaWebhook(secret []byte, header http.Header, body []byte) (PullRequestEvent, error) {
	if err := verifySignature(secret, header.Get("X-Gitea-Signature"), body); err != nil {
		return PullRequestEvent{}, err
	}
	return parsePullRequestEvent("gitea", header.Get("X-Gitea-Event"), header.Get("X-Gitea-Delivery"), body)
}

// ParseGitHubWebhook verifies a GitHub webhook delivery and reads its pull request event.
// X-Hub-Signature-256 must be "sha256=" and the hex HMAC-SHA256 of the body under secret,
// as GitHub documents ("Validating webhook deliveries"), compared in constant time. The
// errors are ParseGiteaWebhook's (X-GitHub-Event other than pull_request is ignored), and
// so is the rule on replays: the caller remembers Delivery (X-GitHub-Delivery) ids.
func ParseGitHubWebhook(secret []byte, header http.Header, body []byte) (PullRequestEvent, error) {
	sig, ok := strings.CutPrefix(header.Get("X-Hub-Signature-256"), "sha256=")
	if !ok {
		return PullRequestEvent{}, fmt.Errorf("%w: no X-Hub-Signature-256 header starting sha256=", ErrWebhookSignature)
	}
	if err := verifySignature(secret, sig, body); err != nil {
		return PullRequestEvent{}, err
	}
	return parsePullRequestEvent("github", header.Get("X-GitHub-Event"), header.Get("X-GitHub-Delivery"), body)
}

// verifySignature checks a hex HMAC-SHA256 of body under secret. An empty secret refuses
// everything: a forge sends an unsigned delivery when it has no secret, and that must not
// pass as verified.
func verifySignature(secret []byte, sigHex string, body []byte) error {
	if len(secret) == 0 {
		return fmt.Errorf("%w: no secret is configured to check it with", ErrWebhookSignature)
	}
	got, err := hex.DecodeString(strings.TrimSpace(sigHex))
	if err != nil || len(got) != sha256.Size {
		return fmt.Errorf("%w: missing or not a hex SHA-256", ErrWebhookSignature)
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	if !hmac.Equal(got, mac.Sum(nil)) {
		return fmt.Errorf("%w: it does not match the body", ErrWebhookSignature)
	}
	return nil
}

// pullRequestPayload is the part of a pull_request delivery review mode reads; Gitea's
// PullRequestPayload and GitHub's pull_request event agree on these fields.
type pullRequestPayload struct {
	Action      string `json:"action"`
	Number      int    `json:"number"`
	PullRequest *struct {
		Number         int        `json:"number"`
		HTMLURL        string     `json:"html_url"`
		Merged         bool       `json:"merged"`
		MergedBy       *forgeUser `json:"merged_by"`
		MergeCommitSHA *string    `json:"merge_commit_sha"`
	} `json:"pull_request"`
	Sender *forgeUser `json:"sender"`
}

// parsePullRequestEvent reads a verified delivery of the given event type.
func parsePullRequestEvent(forge, event, delivery string, body []byte) (PullRequestEvent, error) {
	if event != "pull_request" {
		return PullRequestEvent{}, fmt.Errorf("%w: %s event %q", ErrWebhookIgnored, forge, gitrepo.Sanitize(event))
	}
	var p pullRequestPayload
	if err := json.Unmarshal(body, &p); err != nil {
		return PullRequestEvent{}, fmt.Errorf("forge: %s webhook: %w", forge, err)
	}
	if !trackedActions[p.Action] {
		return PullRequestEvent{}, fmt.Errorf("%w: %s pull_request action %q", ErrWebhookIgnored, forge, gitrepo.Sanitize(p.Action))
	}
	if p.PullRequest == nil || p.PullRequest.HTMLURL == "" {
		return PullRequestEvent{}, fmt.Errorf("forge: %s webhook: a pull_request event without its pull request", forge)
	}
	e := PullRequestEvent{Delivery: delivery, Action: p.Action, URL: p.PullRequest.HTMLURL,
		Number: p.PullRequest.Number, Merged: p.Action == "closed" && p.PullRequest.Merged}
	if e.Number == 0 {
		e.Number = p.Number
	}
	if p.Sender != nil {
		e.By = p.Sender.Login
	}
	if e.Merged {
		if p.PullRequest.MergedBy != nil && p.PullRequest.MergedBy.Login != "" {
			e.By = p.PullRequest.MergedBy.Login
		}
		if p.PullRequest.MergeCommitSHA != nil {
			e.MergeCommit = *p.PullRequest.MergeCommitSHA
		}
	}
	return e, nil
}
