// Package magnumdiff turns the difference between the last event Git holds for a cluster
// and Magnum's view of it into the driver calls that would have produced it, one commit
// each: the decider the reconcile's prologue asks when the desired state is Magnum's view
// (serve --source magnum) rather than an event. It is pure: records and views in, events
// out.
package magnumdiff
