// Package magnum holds the Magnum naming rules and the label keys magnum-gitops shares between
// what it writes (generator) and what it reads back (status): release names (Magnum's
// stack_id), namespaces, chart component names, and the labels and annotations on the
// management cluster's objects. Everything here is a pure function of strings.
//
// The rules are magnum-capi-helm 1.4.0's, so that Flux adopts the releases, namespaces and
// Secrets the Python driver created; docs/driver-rules.md explains each.
package magnum
