package main

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/magnum-gitops/magnum-gitops/internal/buildinfo"
)

// serveRegistry is serve's Prometheus registry, holding from the start
// magnum_gitops_build_info and the Go runtime's and the process's metrics (go_*,
// process_*: memory, goroutines, GC, CPU, open files), as every Flux and Cluster API
// controller exports them; the service registers its own metrics into it.
func serveRegistry(i buildinfo.Info) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(buildInfoMetric(i), collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// buildInfoMetric is magnum_gitops_build_info{version,commit,go_version} 1: the exporters'
// convention of a constant 1 whose labels name the build, so that a query can group any
// other metric by release (as kube-state-metrics' and Flux's *_build_info do).
func buildInfoMetric(i buildinfo.Info) prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "magnum_gitops_build_info",
		Help:        "The build serving: its release, commit and Go version, as labels of a constant 1.",
		ConstLabels: prometheus.Labels{"version": i.Version, "commit": i.Commit, "go_version": i.GoVersion}})
	g.Set(1)
	return g
}

// logVersion is serve's first log line: which build is running, under stable keys.
func logVersion(log *slog.Logger, i buildinfo.Info) {
	log.Info("magnum-gitops starting", "version", i.Version, "commit", i.Commit, "go_version", i.GoVersion)
}
