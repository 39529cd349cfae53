package service

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/magnum-gitops/magnum-gitops/gitrepo"
	"github.com/magnum-gitops/magnum-gitops/reconciler"
	"github.com/magnum-gitops/magnum-gitops/status"
)

// ReviewOptions follow the pull requests of review mode (git.review with a forge).
type ReviewOptions struct {
	// Forge reads and closes the pull requests the repository's PullRequester opened.
	Forge gitrepo.PullRequestTracker
	// Webhook, when set, verifies and parses one delivery of the forge's webhook (its
	// signature checked with the configured secret), served at POST /hooks/pull-requests.
	// A delivery only says which pull request to read again: the state is always read
	// from the forge, so a replayed delivery changes nothing.
	Webhook func(header map[string][]string, body []byte) (url, delivery string, err error)
	// Interval is how long a pull request's state is trusted before the forge is asked
	// again (default 30s): the fallback when webhooks are lost.
	Interval time.Duration
}

// DefaultReviewInterval is ReviewOptions.Interval's default.
const DefaultReviewInterval = 30 * time.Second

// reviews caches what the forge says of the pull requests that carry clusters' operations,
// for the status judgement (status.Options.Review), and acts on what changed: a merge
// makes serve fetch and ask Flux to fetch, so it is applied without waiting for an
// interval; a pull request replaced by a newer one of the same cluster is closed.
type reviews struct {
	o   ReviewOptions
	log *slog.Logger
	// merged is called once per pull request seen merged.
	merged func(ctx context.Context)

	mu     sync.Mutex
	states map[string]reviewState // by URL
	// settled are the superseded pull requests found merged, closed, or closed by supersede.
	settled    map[string]bool
	deliveries deliveries
}

type reviewState struct {
	status.Review
	read time.Time
}

func newReviews(o ReviewOptions, log *slog.Logger, merged func(context.Context)) *reviews {
	if o.Interval <= 0 {
		o.Interval = DefaultReviewInterval
	}
	return &reviews{o: o, log: log, merged: merged, states: map[string]reviewState{}, settled: map[string]bool{}}
}

// review is the state of rec's pull request, read again from the forge when older than
// the interval; the zero Review when no pull request carries rec's event.
func (rv *reviews) review(ctx context.Context, rec reconciler.ClusterRecord) status.Review {
	if rv == nil || rec.PullRequest == "" {
		return status.Review{}
	}
	rv.mu.Lock()
	st, ok := rv.states[rec.PullRequest]
	rv.mu.Unlock()
	// Merged and closed are final: a pull request reopened after it was closed is one
	// the operation's failure already answered.
	if ok && (time.Since(st.read) < rv.o.Interval || st.State == status.ReviewClosed || st.State == status.ReviewMerged) {
		return st.Review
	}
	return rv.refresh(ctx, rec.PullRequest)
}

// refresh reads a pull request's state from the forge. A forge that does not answer
// leaves the last state known (or an unread one, which the status says is waiting).
func (rv *reviews) refresh(ctx context.Context, url string) status.Review {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	pr, err := rv.o.Forge.PullRequestStatus(ctx, url)
	rv.mu.Lock()
	defer rv.mu.Unlock()
	old := rv.states[url]
	if err != nil {
		rv.log.Warn("reading a pull request", "pull_request", url, "error", err)
		return cmpReview(old.Review, url)
	}
	st := reviewState{Review: status.Review{URL: url, State: string(pr.State), By: pr.By, Unmergeable: pr.Unmergeable}, read: time.Now()}
	rv.states[url] = st
	rv.prune()
	if st.State != old.State {
		rv.log.Info("pull request", "pull_request", url, "state", st.State, "by", st.By)
		if st.State == status.ReviewMerged && rv.merged != nil {
			go rv.merged(context.WithoutCancel(ctx))
		}
	}
	return st.Review
}

// maxReviews bounds what reviews remembers: a long-running serve sees a pull request per
// event.
const maxReviews = 4096

// prune forgets, past maxReviews, the pull requests found merged or closed (a cluster's
// record then carries a newer one, or none: asked again, the forge answers the same), and
// the superseded ones settled. Callers hold mu.
func (rv *reviews) prune() {
	if len(rv.states) > maxReviews {
		for url, st := range rv.states {
			if st.State == status.ReviewMerged || st.State == status.ReviewClosed {
				delete(rv.states, url)
			}
		}
	}
	if len(rv.settled) > maxReviews {
		clear(rv.settled)
	}
}

func cmpReview(r status.Review, url string) status.Review {
	if r.URL == "" {
		r.URL = url
	}
	return r
}

// supersede closes the pull requests of clusters' earlier events that a later event
// replaced (ClusterRecord.Superseded), if they are still open: the later event was
// proposed against main whole (or, a delete of what main never held, needed no change at
// all), and merging the older would undo it. The leader runs it every interval.
func (rv *reviews) supersede(ctx context.Context, recs []reconciler.ClusterRecord) {
	for _, rec := range recs {
		for _, old := range rec.Superseded {
			rv.mu.Lock()
			done := rv.settled[old]
			rv.mu.Unlock()
			if done {
				continue
			}
			// Only an open one: a merged one is history, a closed one was answered.
			if st := rv.refresh(ctx, old); st.State != status.ReviewOpen {
				if st.State != "" {
					rv.settle(old)
				}
				continue
			}
			by := "Magnum event " + rec.Event.ID + " (" + string(rec.Event.Operation) + ")"
			if rec.PullRequest != "" {
				by = rec.PullRequest + " (" + by + ")"
			}
			if err := rv.o.Forge.ClosePullRequest(ctx, old, "Superseded by "+by+": closed by magnum-gitops."); err != nil {
				rv.log.Warn("closing a superseded pull request", "pull_request", old, "event_id", rec.Event.ID, "error", err)
				continue
			}
			rv.settle(old)
			rv.log.Info("closed a superseded pull request", "pull_request", old, "event_id", rec.Event.ID,
				"cluster_uuid", rec.Event.Cluster.UUID)
		}
	}
}

// settle remembers a superseded pull request that needs nothing more.
func (rv *reviews) settle(url string) {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	rv.settled[url] = true
	rv.prune()
}

// deliveries remembers the last webhook deliveries, so a replayed one is answered without
// asking the forge again.
type deliveries struct {
	seen  map[string]bool
	order []string
}

// first reports whether id was not seen among the last 1,024 deliveries, and remembers it.
func (d *deliveries) first(id string) bool {
	if id == "" {
		return true
	}
	if d.seen == nil {
		d.seen = map[string]bool{}
	}
	if d.seen[id] {
		return false
	}
	d.seen[id] = true
	d.order = append(d.order, id)
	if len(d.order) > 1024 {
		delete(d.seen, d.order[0])
		d.order = d.order[1:]
	}
	return true
}
