package service

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/magnum-gitops/magnum-gitops/reconciler"
)

// metrics are the service's Prometheus metrics, named as Flux names its own
// (<component>_<noun>_<unit>).
type metrics struct {
	events      *prometheus.CounterVec
	commits     prometheus.Counter
	pushes      prometheus.Counter
	pushRetries prometheus.Counter
	conflicts   prometheus.Counter
	groupSize   prometheus.Histogram
	latency     prometheus.Histogram
	steps       *prometheus.HistogramVec
	resync      prometheus.Histogram
	leader      prometheus.Gauge
	deletes     prometheus.Counter
	health      *prometheus.CounterVec
	// resyncChanged and clusters are the levels an alert watches: drift found by resync,
	// and clusters by the Magnum status the leader last judged.
	resyncChanged prometheus.Counter
	clusters      *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "magnum_gitops_events_total",
			Help: "Events answered, by operation and outcome (replayed: a retried event id; unauthorized, too_large " +
				"and invalid with operation unknown: refused before the body was read or decoded)."}, []string{"operation", "outcome"}),
		commits: prometheus.NewCounter(prometheus.CounterOpts{Name: "magnum_gitops_commits_total",
			Help: "Commits pushed for events."}),
		pushes: prometheus.NewCounter(prometheus.CounterOpts{Name: "magnum_gitops_pushes_total",
			Help: "Pushes that landed, one per group of events (one per event to a review branch)."}),
		pushRetries: prometheus.NewCounter(prometheus.CounterOpts{Name: "magnum_gitops_push_retries_total",
			Help: "Push attempts repeated because the remote branch moved or failed transiently, once per group."}),
		conflicts: prometheus.NewCounter(prometheus.CounterOpts{Name: "magnum_gitops_conflicts_total",
			Help: "Events refused with 409: someone changed the same files differently, or an event id came again with another body."}),
		groupSize: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "magnum_gitops_group_size",
			Help: "Events per group of clusters reconciled together, retried event ids included.", Buckets: []float64{1, 2, 5, 10, 20, 50, 100, 200}}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "magnum_gitops_event_duration_seconds",
			Help: "From an event's arrival to its answer (pushed), its wait in the queue included.", Buckets: prometheus.ExponentialBuckets(0.005, 2, 12)}),
		steps: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "magnum_gitops_step_duration_seconds",
			Help:    "Per event: its render, and its group's commit building (plans included) and push.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)}, []string{"step"}),
		resync: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "magnum_gitops_resync_duration_seconds",
			Help: "Duration of a resync of every cluster.", Buckets: prometheus.ExponentialBuckets(0.1, 2, 10)}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{Name: "magnum_gitops_leader",
			Help: "1 while this replica runs the background loops."}),
		deletes: prometheus.NewCounter(prometheus.CounterOpts{Name: "magnum_gitops_deletes_completed_total",
			Help: "Deletes finished: the CAPI Cluster gone, its Secrets deleted from the API server, its directory removed from Git."}),
		health: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "magnum_gitops_health_reports_total",
			Help: "Health reports to Magnum, by result (error: the PATCH, or a GET before it, failed; deferred: Magnum would not update the cluster in its state, tried again next pass)."}, []string{"result"}),
		resyncChanged: prometheus.NewCounter(prometheus.CounterOpts{Name: "magnum_gitops_resync_changed_clusters_total",
			Help: "Clusters a resync committed because their files in Git differed from what their records render: a hand edit, a revert, or a new build's output."}),
		clusters: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "magnum_gitops_clusters",
			Help: "Clusters by the Magnum status the leader last judged (its health pass, every health interval)."}, []string{"status"}),
	}
	// Exported at 0 from the start, so that an alert's rate() has a series to read.
	for _, r := range []string{"sent", "unchanged", "deferred", "error"} {
		m.health.WithLabelValues(r)
	}
	for _, st := range []string{"render", "commit", "push"} {
		m.steps.WithLabelValues(st)
	}
	reg.MustRegister(m.events, m.commits, m.pushes, m.pushRetries, m.conflicts, m.groupSize, m.latency, m.steps, m.resync, m.leader, m.deletes, m.health,
		m.resyncChanged, m.clusters)
	return m
}

// judgedClusters sets the clusters gauge to one health pass's count by status.
func (m *metrics) judgedClusters(byStatus map[string]int) {
	m.clusters.Reset()
	for st, n := range byStatus {
		m.clusters.WithLabelValues(st).Set(float64(n))
	}
}

// observe records one answered event; what its group cost is observeGroup's, counted once.
func (m *metrics) observe(s reconciler.Summary, took time.Duration) {
	if s.Replayed {
		// A retry answered from the ledger: its commit was counted the first time.
		m.events.WithLabelValues(string(s.Operation), "replayed").Inc()
		m.latency.Observe(took.Seconds())
		return
	}
	m.events.WithLabelValues(string(s.Operation), s.Outcome).Inc()
	if s.Outcome == reconciler.OutcomeCommitted {
		m.commits.Inc()
	}
	if s.Kind() == reconciler.KindConflict && s.Error != "" {
		m.conflicts.Inc()
	}
	m.latency.Observe(took.Seconds())
	if t := s.Timings; t.Render > 0 {
		m.steps.WithLabelValues("render").Observe(t.Render.Seconds())
		if t.Commit > 0 {
			m.steps.WithLabelValues("commit").Observe(t.Commit.Seconds())
		}
		if t.Push > 0 {
			m.steps.WithLabelValues("push").Observe(t.Push.Seconds())
		}
	}
}

// observeGroup records what one group cost.
func (m *metrics) observeGroup(g reconciler.Report) {
	if g.Events > 0 { // not a group of resyncs or requeued clusters only
		m.groupSize.Observe(float64(g.Events))
	}
	m.pushes.Add(float64(g.Pushes))
	m.pushRetries.Add(float64(g.Retries))
}

// refused records an event the API refused before it reached the Reconciler. operation and
// outcome come from a fixed set (httpapi), so the labels stay bounded.
func (m *metrics) refused(operation, outcome string) {
	m.events.WithLabelValues(operation, outcome).Inc()
}
