package reconciler

import (
	"context"
	"errors"
	"strings"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/gitrepo"
)

// Kind is the outcome class of a failed reconciliation: what the caller should do next.
type Kind int

// The outcome classes, in the words Flux uses for its conditions.
const (
	// KindRetry: a transient failure (network, a remote that kept moving, a timeout); the
	// same event may succeed later.
	KindRetry Kind = iota
	// KindInvalid: the event or configuration is wrong (stalled): retrying cannot help.
	KindInvalid
	// KindConflict: someone changed the cluster's files in the repository differently; a
	// human has to look. Nothing was overwritten.
	KindConflict
	// KindPermanent: the repository refuses us (credentials, missing repository or branch,
	// a hook declining the push); an operator has to act.
	KindPermanent
)

// String implements fmt.Stringer.
func (k Kind) String() string {
	switch k {
	case KindInvalid:
		return "invalid"
	case KindConflict:
		return "conflict"
	case KindPermanent:
		return "permanent"
	}
	return "retry"
}

// Sentinel errors for errors.Is, one per Kind.
var (
	ErrInvalid   = v1alpha1.ErrInvalidInput
	ErrConflict  = gitrepo.ErrConflict
	ErrRetry     = errors.New("reconciler: transient failure, retry")
	ErrPermanent = errors.New("reconciler: refused by the repository")
	// ErrIdempotencyConflict: an event id arrived again with a different body. The id is
	// the client's promise that a retry is the same request; breaking it is a conflict.
	ErrIdempotencyConflict = errors.New("event id already used for a different event")
	// ErrPlaintextRefused: Secrets would reach the repository unencrypted. It is invalid
	// input: the configuration must say how Secrets are encrypted.
	ErrPlaintextRefused error = inputRefusal("Secrets would be written in plaintext: set sops.age_recipients (see docs/secrets.md), or pass --insecure-plaintext-secrets")
)

// inputRefusal is a refusal that blames the input as a whole rather than one field.
type inputRefusal string

// Error implements error.
func (r inputRefusal) Error() string { return string(r) }

// Unwrap makes errors.Is(err, v1alpha1.ErrInvalidInput) true.
func (inputRefusal) Unwrap() error { return v1alpha1.ErrInvalidInput }

// failure is a step's failure with its outcome class. It is not exported: callers act on
// the class, which errors.Is with the sentinels and Summary.Kind tell them, so the
// type can change without them.
type failure struct {
	Kind Kind
	// Step names the pipeline step that failed, e.g. "render" or "push".
	Step string
	Err  error
}

// Error implements error.
func (e *failure) Error() string {
	// A refusal lists each problem on a line of its own: each line says which step refused
	// it, so that none reads as a message of its own when lines are shown apart.
	return e.Step + ": " + strings.ReplaceAll(e.Err.Error(), "\n", "\n"+e.Step+": ")
}

// Unwrap returns the step's error.
func (e *failure) Unwrap() error { return e.Err }

// Is matches the sentinel of the error's Kind.
func (e *failure) Is(target error) bool {
	switch target {
	case ErrInvalid:
		return e.Kind == KindInvalid
	case ErrRetry:
		return e.Kind == KindRetry
	case ErrPermanent:
		return e.Kind == KindPermanent
	}
	return false
}

// kindOf classifies any error of the pipeline: field errors are invalid input, gitrepo's
// conflicts are conflicts, refusals by the remote are permanent, and everything else —
// network, context, a remote that kept moving — may succeed on retry.
func kindOf(err error) Kind {
	var e *failure
	switch {
	case errors.As(err, &e):
		return e.Kind
	case errors.Is(err, v1alpha1.ErrInvalidInput), errors.Is(err, gitrepo.ErrInvalidChange):
		return KindInvalid
	case errors.Is(err, gitrepo.ErrConflict):
		return KindConflict
	case errors.Is(err, gitrepo.ErrAuthentication), errors.Is(err, gitrepo.ErrRepositoryNotFound),
		errors.Is(err, gitrepo.ErrBranchNotFound), errors.Is(err, gitrepo.ErrPushRejected):
		return KindPermanent
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, gitrepo.ErrTooManyAttempts):
		return KindRetry
	}
	return KindRetry
}

// stepError wraps a step's error with its class; nil stays nil.
func stepError(step string, err error) error {
	if err == nil {
		return nil
	}
	var e *failure
	if errors.As(err, &e) {
		return err
	}
	return &failure{Kind: kindOf(err), Step: step, Err: err}
}
