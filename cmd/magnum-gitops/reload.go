package main

import (
	"log/slog"

	"github.com/magnum-gitops/magnum-gitops/internal/config"

	"github.com/prometheus/client_golang/prometheus"
)

// reloadRefusals counts and logs, once per change, a file serve reads again on change
// (serve.token_files, serve.tls, the Git and forge credentials, sops.age_recipients_file)
// whose new contents it refused: the last good ones stay
// in use, so nothing is served insecurely and no valid client is refused for it. It
// returns the onInvalid of each such file set, by what names it in the metric.
func reloadRefusals(reg prometheus.Registerer, log *slog.Logger) config.Refused {
	refused := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "magnum_gitops_reload_errors_total",
		Help: "Changed files serve refused to load, by kind; the last good contents stay in use."}, []string{"what"})
	reg.MustRegister(refused)
	for _, what := range []string{"token_files", "tls", "git_auth", "forge_token", "webhook_secret", "age_recipients"} {
		refused.WithLabelValues(what) // exported at 0, so an alert can compare with it
	}
	return func(what string) func(error) {
		return func(err error) {
			refused.WithLabelValues(what).Inc()
			log.Warn("a changed file was refused: the last good one stays in use", "what", what, "error", err)
		}
	}
}
