package gitea

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// MergeStyle is how Gitea merges a pull request (the "Do" of POST .../merge).
type MergeStyle string

// The merge styles review mode must handle: each puts a different commit on the base.
const (
	// MergeCommit adds a merge commit whose second parent is the branch's head.
	MergeCommit MergeStyle = "merge"
	// Squash adds one new commit with the branch's changes; the branch's commits and, with
	// an edited message, their trailers are not on the base.
	Squash MergeStyle = "squash"
	// Rebase replays the branch's commits on the base and fast-forwards it: new commit
	// ids, the same messages.
	Rebase MergeStyle = "rebase"
)

// mergeWait bounds how long Merge retries while Gitea is still checking the pull request's
// mergeability, which it does in the background after every push.
const mergeWait = 60 * time.Second

// Approve submits an approving review of pull request n as Actor.
func (r *Repo) Approve(n int) {
	r.t.Helper()
	r.s.must(r.t, r.Actor, http.MethodPost, r.api(fmt.Sprintf("/pulls/%d/reviews", n)),
		map[string]any{"event": "APPROVED", "body": "approved by " + r.Actor.Name}, nil)
}

// Merge merges pull request n with style as Actor; a non-empty message replaces Gitea's
// default merge message. It retries while Gitea answers that it is still checking the
// pull request.
func (r *Repo) Merge(n int, style MergeStyle, message string) {
	r.t.Helper()
	if err := r.TryMerge(n, style, message); err != nil {
		r.t.Fatal(err)
	}
}

// TryMerge is Merge returning Gitea's refusal (an *APIError, e.g. HTTP 405 when approvals
// are missing) instead of failing the test.
func (r *Repo) TryMerge(n int, style MergeStyle, message string) error {
	body := map[string]any{"Do": string(style)}
	if message != "" {
		body["MergeMessageField"] = message
	}
	deadline := time.Now().Add(mergeWait)
	for {
		err := r.s.Call(r.Actor, http.MethodPost, r.api(fmt.Sprintf("/pulls/%d/merge", n)), body, nil)
		var apiErr *APIError
		if err == nil || !errors.As(err, &apiErr) || !strings.Contains(apiErr.Message, "try again later") || time.Now().After(deadline) {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Close closes pull request n without merging it, as Actor.
func (r *Repo) Close(n int) {
	r.t.Helper()
	r.s.must(r.t, r.Actor, http.MethodPatch, r.api(fmt.Sprintf("/pulls/%d", n)), map[string]any{"state": "closed"}, nil)
}
