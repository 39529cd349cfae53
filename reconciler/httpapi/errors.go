package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/reconciler"
)

// apiError is the body of every error answer.
type apiError struct {
	Code    string                 `json:"code"`
	Message string                 `json:"message"`
	Fields  []*v1alpha1.FieldError `json:"fields,omitempty"`
	Paths   []string               `json:"paths,omitempty"`
}

// writeError answers with an error body.
func writeError(w http.ResponseWriter, status int, e apiError) {
	writeJSON(w, status, map[string]apiError{"error": e})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// statusOf maps a failed event's Summary to the HTTP status a client acts on.
func statusOf(s reconciler.Summary) (int, string) {
	switch s.Kind() {
	case reconciler.KindInvalid:
		return http.StatusBadRequest, "invalid_input"
	case reconciler.KindConflict:
		if errors.Is(s.Err(), reconciler.ErrIdempotencyConflict) {
			return http.StatusConflict, "idempotency_conflict"
		}
		return http.StatusConflict, "conflict"
	case reconciler.KindPermanent:
		// The Git server refused us: the fault is upstream, and retrying will not help
		// until an operator acts.
		return http.StatusBadGateway, "repository_refused"
	}
	return http.StatusServiceUnavailable, "unavailable"
}
