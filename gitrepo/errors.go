package gitrepo

import (
	"errors"
	"sort"
	"strings"
)

// Sentinel errors. Callers tell outcomes apart with errors.Is: ErrConflict and the
// configuration errors are terminal, the others may succeed later.
var (
	// ErrConflict: a path of the change was changed on the remote, to other content,
	// between the state the change was built on and the push. Nothing was overwritten.
	ErrConflict = errors.New("gitrepo: conflicting remote change")
	// ErrAuthentication: the remote refused the credentials.
	ErrAuthentication = errors.New("gitrepo: authentication failed")
	// ErrRepositoryNotFound: there is no repository at the URL.
	ErrRepositoryNotFound = errors.New("gitrepo: repository not found")
	// ErrBranchNotFound: the remote has commits but not the configured branch.
	ErrBranchNotFound = errors.New("gitrepo: branch not found on the remote")
	// ErrTooManyAttempts: the push still failed after Options.MaxAttempts attempts.
	ErrTooManyAttempts = errors.New("gitrepo: giving up after repeated push failures")
	// ErrInvalidChange: a change is malformed (bad path, trailer or branch) or not allowed
	// (a protected review branch, a review change in a group).
	ErrInvalidChange = errors.New("gitrepo: invalid change")
	// ErrPushRejected: the remote refused the push for a reason retrying cannot fix (a
	// hook declined it, a protected or hidden ref). Nothing was written.
	ErrPushRejected = errors.New("gitrepo: push rejected by the remote")
	// ErrStale: what a planned change read reads differently on the commit it would go on
	// (the remote moved, or a change before it in the batch wrote there). Nothing of it
	// was committed; plan it again on the new tip (Batch.Tip) and add that.
	ErrStale = errors.New("gitrepo: planned on a tree that has moved since")
	// ErrStopWalk, returned by a Walk callback, ends the walk early without an error.
	ErrStopWalk = errors.New("gitrepo: stop walking")
)

// PushRejectedError is the remote's refusal of a ref update.
type PushRejectedError struct {
	// Ref is the ref the push updated, e.g. refs/heads/main.
	Ref string
	// Reason is receive-pack's status for the ref, e.g. "pre-receive hook declined".
	Reason string
	// Message is what the remote's hooks printed, bounded and with control characters
	// removed; it may be empty.
	Message string
}

// Error implements error.
func (e *PushRejectedError) Error() string {
	s := "gitrepo: the remote rejected the update of " + e.Ref + ": " + e.Reason
	if e.Message != "" {
		s += " (remote said: " + e.Message + ")"
	}
	return s
}

// Is makes errors.Is(err, ErrPushRejected) true.
func (e *PushRejectedError) Is(target error) bool { return target == ErrPushRejected }

// ConflictError lists the paths a conflicting remote change touched.
type ConflictError struct {
	Branch string
	Paths  []string
}

// Error implements error.
func (e *ConflictError) Error() string {
	p := append([]string(nil), e.Paths...)
	sort.Strings(p)
	return "gitrepo: " + e.Branch + ": changed on the remote since the change was made: " + strings.Join(p, ", ")
}

// Is makes errors.Is(err, ErrConflict) true.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// errStale means the remote branch moved: fetch and apply again.
var errStale = errors.New("gitrepo: remote branch moved")
