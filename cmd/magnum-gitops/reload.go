package main

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
)

// reloadRefusals counts and logs, once per change, a file serve reads again on change
// (serve.token_files, serve.tls) whose new contents it refused: the last good ones stay
// in use, so nothing is served insecurely and no valid client is refused for it. It
// returns the onInvalid of each such file set, by what names it in the metric.
func reloadRefusals(reg prometheus.Registerer, log *slog.Logger) func(what string) func(error) {
	refused := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "magnum_gitops_reload_errors_total",
		Help: "Changed files serve refused to load (token_files, tls); the last good contents stay in use."}, []string{"what"})
	reg.MustRegister(refused)
	for _, what := range []string{"token_files", "tls"} {
		refused.WithLabelValues(what) // exported at 0, so an alert can compare with it
	}
	return func(what string) func(error) {
		return func(err error) {
			refused.WithLabelValues(what).Inc()
			log.Warn("a changed file was refused: the last good one stays in use", "what", what, "error", err)
		}
	}
}
