package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/internal/buildinfo"
	"github.com/magnum-gitops/magnum-gitops/reconciler"
	"github.com/magnum-gitops/magnum-gitops/status"
	"github.com/magnum-gitops/magnum-gitops/status/report"
)

// DefaultMaxBodyBytes bounds an event body: events are a few kilobytes, CA bundles
// included.
const DefaultMaxBodyBytes = 1 << 20

// Server serves the event and read APIs.
type Server struct {
	// Submit commits an accepted event and answers once it is pushed
	// (reconciler.Reconciler.Submit).
	Submit func(ctx context.Context, ev *v1alpha1.ClusterEvent) reconciler.Summary
	// Clusters answers GET /v1/clusters/{uuid}.
	Clusters *reconciler.Clusters
	// Status judges a cluster from the management cluster (GET …/status); nil answers 503.
	Status report.Lookup
	// Applied reports the revision Flux last applied to a cluster's namespace on its
	// management cluster (its Kustomization's lastAppliedRevision) and whether that
	// includes revision; known is false when there is no such Kustomization. Nil when there
	// is no management cluster.
	Applied func(rec reconciler.ClusterRecord, revision string) (applied string, includes, known bool)
	// Tokens gives the accepted bearer tokens, asked on every request.
	Tokens TokenSource
	// AcceptClientCerts lets a verified TLS client certificate stand for a token.
	AcceptClientCerts bool
	// MaxBodyBytes bounds a request body (DefaultMaxBodyBytes when 0).
	MaxBodyBytes int64
	// Log receives one line per event; it never sees a body.
	Log *slog.Logger
	// Refused, when set, is called once per POST /v1/events refused before it reached the
	// Reconciler (which reports the others), for metrics: operation is the event's, or
	// OperationUnknown before it is decoded; outcome is one of the Outcome constants here
	// or the Kind of the failure (reconciler.Kind.String), so both labels stay bounded.
	Refused func(operation, outcome string)
	// Build is what GET /version answers; nil: this binary's (buildinfo.Read).
	Build *buildinfo.Info

	draining atomic.Bool
}

// Labels of events refused before they reached the Reconciler.
const (
	// OperationUnknown: the body was not read, or did not decode.
	OperationUnknown = "unknown"
	// OutcomeUnauthorized: no valid token or client certificate (401).
	OutcomeUnauthorized = "unauthorized"
	// OutcomeTooLarge: the body exceeds MaxBodyBytes (413).
	OutcomeTooLarge = "too_large"
)

// Drain makes new events answer 503 while the ones in flight finish (graceful shutdown).
func (s *Server) Drain() { s.draining.Store(true) }

// Draining reports whether Drain was called.
func (s *Server) Draining() bool { return s.draining.Load() }

// refused counts an event refused before it reached the Reconciler.
func (s *Server) refused(operation, outcome string) {
	if s.Refused != nil {
		s.Refused(operation, outcome)
	}
}

// Handler returns the API's routes: /v1/ behind authentication, GET /version open; every
// answer carries VersionHeader.
func (s *Server) Handler() http.Handler {
	v1 := http.NewServeMux()
	v1.HandleFunc("POST /v1/events", s.postEvent)
	v1.HandleFunc("GET /v1/clusters/{uuid}", s.getCluster)
	v1.HandleFunc("GET /v1/clusters/{uuid}/status", s.getStatus)
	mux := http.NewServeMux()
	mux.Handle("/v1/", s.authenticate(v1))
	mux.HandleFunc("GET /version", s.getVersion)
	return s.withVersionHeader(mux)
}

// authenticate refuses every request without a valid credential, before any body is read.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.authorized(r) {
			if r.Method == http.MethodPost && r.URL.Path == "/v1/events" {
				s.refused(OperationUnknown, OutcomeUnauthorized)
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="magnum-gitops"`)
			writeError(w, http.StatusUnauthorized, apiError{Code: "unauthorized", Message: errUnauthorized.Error()})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// eventMediaTypes are the bodies POST /v1/events accepts.
var eventMediaTypes = []string{"application/json", "application/yaml", "application/x-yaml", "text/yaml"}

func (s *Server) postEvent(w http.ResponseWriter, r *http.Request) {
	if s.draining.Load() {
		// The outcome of the Reconciler's own "shutting down" answer: the same 503, the same label.
		s.refused(OperationUnknown, reconciler.KindRetry.String())
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, apiError{Code: "unavailable", Message: "shutting down: retry with the same event id"})
		return
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || !slices.Contains(eventMediaTypes, mt) {
		s.refused(OperationUnknown, reconciler.KindInvalid.String())
		writeError(w, http.StatusBadRequest, apiError{Code: "unsupported_media_type",
			Message: fmt.Sprintf("Content-Type must be one of %s", strings.Join(eventMediaTypes, ", "))})
		return
	}
	limit := s.MaxBodyBytes
	if limit <= 0 {
		limit = DefaultMaxBodyBytes
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		s.refused(OperationUnknown, OutcomeTooLarge)
		writeError(w, http.StatusRequestEntityTooLarge, apiError{Code: "too_large", Message: fmt.Sprintf("the body exceeds %d bytes", limit)})
		return
	case err != nil:
		s.refused(OperationUnknown, reconciler.KindInvalid.String())
		writeError(w, http.StatusBadRequest, apiError{Code: "bad_request", Message: "reading the body: " + err.Error()})
		return
	}
	ev, err := reconciler.Decode(body)
	if err != nil {
		sum := reconciler.NewSummary(nil, nil, err)
		s.refused(OperationUnknown, sum.Outcome)
		s.logEvent(r, sum, 0)
		writeError(w, http.StatusBadRequest, apiError{Code: "invalid_input", Message: sum.Error, Fields: sum.Fields})
		return
	}
	if key := r.Header.Get("Idempotency-Key"); key != "" && ev.ID != "" && key != ev.ID {
		s.refused(string(ev.Operation), reconciler.KindInvalid.String())
		writeError(w, http.StatusBadRequest, apiError{Code: "invalid_input", Message: "Idempotency-Key differs from the event id"})
		return
	}
	start := time.Now()
	sum := s.Submit(r.Context(), ev)
	s.logEvent(r, sum, time.Since(start))
	if sum.Error != "" {
		code, name := statusOf(sum)
		if code == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", "1")
		}
		writeError(w, code, apiError{Code: name, Message: sum.Error, Fields: sum.Fields, Paths: sum.Paths})
		return
	}
	writeJSON(w, http.StatusOK, sum)
}

// logEvent writes the one log line of an event, with stable keys and no value of the body.
func (s *Server) logEvent(r *http.Request, sum reconciler.Summary, took time.Duration) {
	if s.Log == nil {
		return
	}
	attrs := []any{"event_id", sum.EventID, "operation", sum.Operation, "cluster", sum.ClusterUUID,
		"stack_id", sum.StackID, "outcome", sum.Outcome, "commit", sum.Revision, "duration", took,
		"request_id", r.Header.Get("X-OpenStack-Request-ID")}
	if sum.Replayed {
		// A retry answered from the commit that carried its event id: nothing committed.
		attrs = append(attrs, "replayed", true)
	}
	if sum.Error != "" {
		s.Log.Warn("event refused", append(attrs, "error", sum.Error)...)
		return
	}
	s.Log.Info("event applied", attrs...)
}

// clusterAnswer is the body of GET /v1/clusters/{uuid}.
type clusterAnswer struct {
	UUID      string `json:"uuid"`
	StackID   string `json:"stack_id"`
	Namespace string `json:"namespace"`
	EventID   string `json:"event_id,omitempty"`
	Operation string `json:"operation"`
	// Revision is the commit that carries the last event; Applied says whether Flux has
	// applied it, AppliedRevision what Flux applied last.
	Revision        string    `json:"revision,omitempty"`
	Applied         *bool     `json:"applied,omitempty"`
	AppliedRevision string    `json:"applied_revision,omitempty"`
	UpdatedAt       time.Time `json:"updated_at"`
}

func (s *Server) getCluster(w http.ResponseWriter, r *http.Request) {
	rec, ok := s.Clusters.Get(r.PathValue("uuid"))
	if !ok {
		writeError(w, http.StatusNotFound, apiError{Code: "not_found", Message: "cluster not found"})
		return
	}
	a := clusterAnswer{UUID: rec.Event.Cluster.UUID, StackID: rec.StackID, Namespace: rec.Namespace,
		EventID: rec.Event.ID, Operation: string(rec.Event.Operation), Revision: rec.Revision, UpdatedAt: rec.At}
	if s.Applied != nil {
		if applied, done, known := s.Applied(rec, rec.Revision); known {
			a.AppliedRevision = applied
			done = done && rec.Revision != ""
			a.Applied = &done
		}
	}
	writeJSON(w, http.StatusOK, a)
}

func (s *Server) getStatus(w http.ResponseWriter, r *http.Request) {
	if s.Status == nil {
		writeError(w, http.StatusServiceUnavailable, apiError{Code: "unavailable", Message: "no management cluster configured"})
		return
	}
	rep, err := s.Status(r.PathValue("uuid"))
	switch {
	case errors.Is(err, report.ErrNotFound):
		writeError(w, http.StatusNotFound, apiError{Code: "not_found", Message: "cluster not found"})
	case err != nil:
		writeError(w, http.StatusServiceUnavailable, apiError{Code: "unavailable", Message: err.Error()})
	default:
		a := statusAnswer{Report: rep}
		if rec, ok := s.Clusters.Get(rep.ClusterUUID); ok {
			a.EventID, a.Revision.Desired = rec.Event.ID, rec.Revision
			if s.Applied != nil {
				a.Revision.Applied, _, _ = s.Applied(rec, rec.Revision)
			}
		} else if gone, ok := s.Clusters.Gone(rep.ClusterUUID); ok {
			// DELETE_COMPLETE belongs to the delete: the driver shim takes a terminal
			// status only from the answer about the event it sent.
			a.EventID, a.Revision.Desired = gone.Event.ID, gone.Revision
		}
		writeJSON(w, http.StatusOK, a)
	}
}

// statusAnswer is the body of GET /v1/clusters/{uuid}/status: the judgement with the event
// it reflects (for a completed delete, the delete's), so a client can ignore an answer
// about another event than its last.
type statusAnswer struct {
	status.Report
	EventID  string `json:"event_id,omitempty"`
	Revision struct {
		Desired string `json:"desired,omitempty"`
		Applied string `json:"applied,omitempty"`
	} `json:"revision"`
}
