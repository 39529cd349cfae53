// Package v1alpha1 is the ClusterEvent document (magnum-gitops.io/v1alpha1): the versioned
// input format of magnum-gitops. A ClusterEvent is one Magnum cluster change with everything
// needed to render it — the cluster, its template and node groups as Magnum's API returns
// them, the OpenStack facts the driver would look up, and optionally the Secret material only
// the Magnum conductor holds.
//
// The package holds the types, their decoding (strict at the top level, tolerant inside the
// Magnum objects, which carry many fields no renderer reads) and the field errors every
// consumer reports. It performs no I/O.
package v1alpha1
