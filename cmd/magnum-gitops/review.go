package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/magnum-gitops/magnum-gitops/gitrepo"

	"github.com/magnum-gitops/magnum-gitops/gitrepo/forge"
	"github.com/magnum-gitops/magnum-gitops/internal/config"
	"github.com/magnum-gitops/magnum-gitops/reconciler/service"
)

// reviewOptions are serve's review mode: the forge its pull requests are followed on, and
// its webhook when git.review names a secret for it; nil outside review mode or without a
// forge. A token the forge refuses, a repository it does not show or one the token may
// not push to is bad configuration, refused before serve starts; a forge that does not
// answer now is only logged: it may be back by the first event.
func reviewOptions(ctx context.Context, file *config.File, refused config.Refused, log *slog.Logger) (*service.ReviewOptions, error) {
	r := file.Git.Review
	if r.BranchTemplate == "" {
		return nil, nil
	}
	f, err := r.OpenForge(refused)
	if err != nil || f == nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	switch err := f.Client.Check(cctx); {
	case errors.Is(err, gitrepo.ErrAuthentication), errors.Is(err, gitrepo.ErrRepositoryNotFound), errors.Is(err, forge.ErrCannotPush):
		return nil, fmt.Errorf("git.review.%s: %w", f.Kind, err)
	case err != nil:
		log.Warn("review mode: the forge does not answer; pull requests wait until it does", "forge", f.Kind, "error", err)
	}
	o := &service.ReviewOptions{Forge: f.Client, Interval: r.PollInterval.Duration}
	if secret := f.WebhookSecret; secret != nil {
		parse := forge.ParseGiteaWebhook
		if f.Kind == "github" {
			parse = forge.ParseGitHubWebhook
		}
		o.Webhook = func(header map[string][]string, body []byte) (string, string, error) {
			ev, err := parse([]byte(secret.Value()), http.Header(header), body)
			return ev.URL, ev.Delivery, err
		}
	}
	return o, nil
}
