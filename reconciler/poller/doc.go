// Package poller is the Magnum source of desired state (serve --source magnum): it polls
// Magnum's API and hands each selected cluster's view to the reconciler
// (Reconciler.Converge), whose reconcile derives the driver calls Git lacks, as the HTTP
// API (package httpapi) hands over the driver shim's events.
package poller
