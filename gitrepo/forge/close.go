package forge

import (
	"context"
	"fmt"
	"net/http"
)

// closing is what closing pull request n asks of a forge's REST API, the same on Gitea and
// GitHub but for the URLs and how errors read.
type closing struct {
	forge       string // names the forge in errors
	n           int
	commentsURL string // POST {"body": …}
	pullURL     string // PATCH {"state": "closed"}
	// open reads whether the pull request is still open.
	open func(ctx context.Context) (bool, error)
	// send makes one call and returns its status and, for other answers than 2xx, the
	// forge's message.
	send func(ctx context.Context, method, url string, body any) (int, string, error)
}

// close comments, then closes the pull request. One no longer open, before or (a race
// with a reviewer) during the call, is left as it is, without a comment.
func (c closing) close(ctx context.Context, comment string) error {
	if open, err := c.open(ctx); err != nil || !open {
		return err
	}
	if comment != "" {
		status, msg, err := c.send(ctx, http.MethodPost, c.commentsURL, map[string]string{"body": comment})
		if err != nil {
			return err
		}
		if status/100 != 2 {
			return fmt.Errorf("%s: commenting on pull request %d: HTTP %d: %s", c.forge, c.n, status, msg)
		}
	}
	status, msg, err := c.send(ctx, http.MethodPatch, c.pullURL, map[string]string{"state": "closed"})
	if err != nil || status/100 == 2 {
		return err
	}
	if open, err := c.open(ctx); err == nil && !open {
		return nil // merged or closed by someone else meanwhile (Gitea answers 412 for a merged one)
	}
	return fmt.Errorf("%s: closing pull request %d: HTTP %d: %s", c.forge, c.n, status, msg)
}
