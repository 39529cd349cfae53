// Package serveload is the load that serve's events-per-second figure is taken under:
// concurrent clients, each posting events for its own clusters through the HTTP API and
// waiting for each answer, as the driver shims of a fleet of Magnum conductors do. Both
// the in-process benchmark (cmd/magnum-gitops, BenchmarkServeLoad) and the driver of built
// binaries (hack/serveload, for a side-by-side with an older commit's serve) run it, so
// their figures are of the same load.
package serveload
