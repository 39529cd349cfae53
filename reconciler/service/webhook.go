package service

import (
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/magnum-gitops/magnum-gitops/gitrepo/forge"
)

// maxWebhookBytes bounds a webhook delivery: a forge's pull request payload is tens of
// kilobytes.
const maxWebhookBytes = 4 << 20

// reviewWebhook answers POST /hooks/pull-requests, the forge's webhook: a delivery whose
// signature verifies makes serve read its pull request again at once, so the status moves
// and a merge is fetched without waiting for the interval. It carries no credential but
// its signature; it never changes Git by itself.
func (s *Service) reviewWebhook(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxWebhookBytes))
	if err != nil {
		http.Error(w, "reading the body: "+err.Error(), http.StatusBadRequest)
		return
	}
	url, delivery, err := s.reviews.o.Webhook(r.Header, body)
	switch {
	case errors.Is(err, forge.ErrWebhookSignature):
		s.o.Log.Warn("refused a webhook delivery", "delivery", delivery, "error", err)
		http.Error(w, "signature does not verify", http.StatusUnauthorized)
		return
	case errors.Is(err, forge.ErrWebhookIgnored):
		w.WriteHeader(http.StatusNoContent)
		return
	case err != nil:
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.reviews.mu.Lock()
	first := s.reviews.deliveries.first(delivery)
	s.reviews.mu.Unlock()
	if first {
		s.reviews.refresh(context.WithoutCancel(r.Context()), url)
	}
	w.WriteHeader(http.StatusNoContent)
}

// mergedReview brings a merged pull request to the clusters: serve fetches the branch
// (the status compares what Flux applied with what the merge carries) and asks every
// management cluster's Flux to fetch it.
func (s *Service) mergedReview(ctx context.Context) {
	if err := s.o.Sink.Repo.Fetch(ctx); err != nil {
		s.o.Log.Warn("fetching after a merge", "error", err)
	}
	for _, m := range s.managed {
		if m.requester != nil {
			m.requester.request("", nil)
		}
	}
}
