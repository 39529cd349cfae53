// Package reconciler takes Magnum cluster events from their sources (files, an HTTP API, a
// Magnum poller), renders them with the generator and commits them with gitrepo, keeping
// per-cluster order, batching bursts, retrying, and choreographing deletes.
package reconciler
