package report

import (
	"errors"

	"github.com/magnum-gitops/magnum-gitops/status"
)

// Lookup returns the current report of a cluster by Magnum UUID; the service's status API
// (reconciler/httpapi) serves it.
type Lookup func(uuid string) (status.Report, error)

// ErrNotFound is returned by a Lookup for an unknown cluster, and (wrapped together with
// gophercloud's 404 error) by MagnumReporter.Known for a cluster Magnum does not know.
var ErrNotFound = errors.New("status: cluster not found")
