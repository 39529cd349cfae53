// Package poller is the Magnum source of events (serve --source magnum): it polls Magnum's
// API, compares each selected cluster with the last event Git holds for it, and submits the
// driver calls that would have produced the difference, as the HTTP API (package httpapi)
// submits the driver shim's.
package poller
