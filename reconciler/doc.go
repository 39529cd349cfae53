// Package reconciler owns the pipeline from a Magnum cluster event to a repository change,
// the way a Flux controller owns its reconciliation: ordered steps and one summarizer.
//
//	decode → resolve → render → encode Secrets → diff against the repository → commit → push
//
// Reconciler is the service's loop, in the shape of a Flux or Cluster API controller:
// event sources (the HTTP API in httpapi, the Magnum poller in poller, resync) record a
// cluster's operation and queue its UUID; Reconcile loads the cluster's scope (its
// operations waiting for Git) in a prologue, runs its named steps in order (steps.go) and
// summarises once, in a deferred step, into each operation's answer. The clusters
// reconciled together commit as one chain with one push, by one committer; what they did
// beyond the answers (pushes for Flux to fetch, a delete's or an upgrade's progress) is
// returned as a Report, never told to the caller through a hook.
//
// Pipeline runs the steps up to the diff against a gitrepo.Tree (what the repository
// holds); a Sink turns the resulting Plan into a change: GitSink commits and pushes it with
// gitrepo (and plans again on the new head when the remote moved, so identical intent
// never conflicts), DirSink writes it into a directory, all files or none. NewSummary turns
// any step's error into one of four outcomes (invalid input, conflict, retry, permanent)
// that callers act on: the CLI's exit code, the service's HTTP status, a retry.
//
// A plan that changes nothing is a silent success: no commit, no push, no write.
package reconciler
