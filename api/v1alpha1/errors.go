package v1alpha1

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalidInput is wrapped by every error that blames an input document (an event or the
// configuration). Such an error is terminal (Flux would call it stalled): retrying the same
// input cannot succeed, so callers must not retry it.
var ErrInvalidInput = errors.New("invalid input")

// FieldError reports one rule an input field breaks. Field is a path into the event or
// configuration document, e.g. "nodegroups[default-worker].min_node_count" or "labels.boot_volume_size".
// Messages never include secret values.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Error implements error.
func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

// Unwrap lets errors.Is(err, ErrInvalidInput) match.
func (e *FieldError) Unwrap() error { return ErrInvalidInput }

// InputErrors is every FieldError found in one input, in document order. Reporting all of
// them at once saves an operator a fix-and-retry loop per field.
type InputErrors []*FieldError

// Error implements error.
func (es InputErrors) Error() string {
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "\n")
}

// Unwrap lets errors.Is and errors.As see each FieldError.
func (es InputErrors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// FieldErrors lists the FieldErrors an error carries (one, several, or none when the error
// does not blame a field), for callers that report them as data, e.g. an HTTP 400 body.
func FieldErrors(err error) []*FieldError {
	var list InputErrors
	if errors.As(err, &list) {
		return list
	}
	var fe *FieldError
	if errors.As(err, &fe) {
		return []*FieldError{fe}
	}
	return nil
}

// problems collects FieldErrors while a document is checked.
type problems struct{ list InputErrors }

func (p *problems) add(field, format string, args ...any) {
	p.list = append(p.list, &FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
}

func (p *problems) err() error {
	if len(p.list) == 0 {
		return nil
	}
	return p.list
}
