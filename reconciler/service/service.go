package service

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/reconciler"
	"github.com/magnum-gitops/magnum-gitops/reconciler/httpapi"
	"github.com/magnum-gitops/magnum-gitops/reconciler/internal/gate"
	"github.com/magnum-gitops/magnum-gitops/reconciler/poller"
	"github.com/magnum-gitops/magnum-gitops/status"
	"github.com/magnum-gitops/magnum-gitops/status/report"
)

// Options configure the service.
type Options struct {
	Pipeline *reconciler.Pipeline
	Sink     *reconciler.GitSink
	// Listen is the API's address; TLS, when set, serves HTTPS (with client certificates
	// verified when its ClientAuth asks for them).
	Listen string
	TLS    *tls.Config
	// OpsListen serves /healthz, /readyz and /metrics (no authentication); empty serves
	// them on Listen.
	OpsListen    string
	Tokens       httpapi.TokenSource
	MaxBodyBytes int64
	// MaxGroup and MaxWait bound a group commit.
	MaxGroup int
	MaxWait  time.Duration
	// ShutdownDelay is how long the service keeps its listeners open once ctx ends, new
	// events answered 503 and /readyz failing meanwhile: time for Kubernetes to take the
	// endpoint out of its Service, so clients see a 503 they retry rather than a refused
	// connection. Then the events in flight get up to ShutdownTimeout to finish.
	ShutdownDelay time.Duration
	// ReadyInterval is how often the Git remote is checked for /readyz when no push showed
	// it reachable meanwhile, and how soon a replica learns the others' commits (default 5s).
	ReadyInterval time.Duration
	// Management are the management clusters the repository feeds, by the names the
	// configuration's management_clusters give them (one, unnamed, without that section).
	// One the configuration names but Management leaves out answers status 503.
	Management    []ManagementCluster
	StatusOptions func(now time.Time) status.Options
	// Reporter PATCHes health to Magnum every HealthInterval; nil disables it.
	Reporter       *report.MagnumReporter
	HealthInterval time.Duration
	// ResyncInterval re-renders every cluster from its record (0: only at start).
	ResyncInterval time.Duration
	// SettledFile, with Build (the running build's identity, empty for a build from
	// modified sources), is where the clusters a resync found as rendered are kept across
	// restarts of the same build (beside a clone on disk), so that the first resync after
	// a restart skips them as every later one does.
	SettledFile, Build string
	// DeleteInterval is how often deleted clusters are checked for their second phase,
	// chained upgrades for their next step, and in Argo mode deleted node groups for the
	// MachineDeployment Argo CD leaves (leftovers.go).
	DeleteInterval time.Duration
	// Elect, when set, blocks until this replica leads and returns a context that ends
	// when it stops leading; nil means this replica always leads.
	Elect func(ctx context.Context) (context.Context, error)
	// Poller, when set, polls Magnum on the leader (serve --source magnum); the service sets
	// its Clusters and Submit.
	Poller *poller.Poller
	// OnSecretsRemoved is called after a deleted cluster's Secrets are gone (e.g. to
	// delete its application credential).
	OnSecretsRemoved func(ctx context.Context, rec reconciler.ClusterRecord) error
	Log              *slog.Logger
	Registry         *prometheus.Registry
	// Review follows the pull requests of review mode; nil without a forge.
	Review *ReviewOptions
	// Ready, when set, is closed once the service answers.
	Ready chan<- string
}

// ShutdownTimeout bounds how long the events in flight may take once the listeners close;
// a Pod's terminationGracePeriodSeconds must exceed ShutdownDelay plus this.
const ShutdownTimeout = 30 * time.Second

// Service is a running magnum-gitops service.
type Service struct {
	o   Options
	m   *metrics
	git gitReady
	// reconciler also reads the commits of the other replicas into clusters and its
	// ledger of event ids (CatchUp).
	reconciler *reconciler.Reconciler
	clusters   *reconciler.Clusters
	// managed are the management clusters, in the order of the configuration's roots.
	managed []*managed
	api     *httpapi.Server

	// knownHealth is what Magnum was last told per cluster (uuid → report.Known).
	knownHealth sync.Map
	// reviews follows review mode's pull requests (nil without Options.Review).
	reviews *reviews
	// leading is set while this replica runs the leader's loops.
	leading atomic.Bool
	// events records Kubernetes Events; nil when no management cluster takes them.
	events *events
}

// observe is what a reconcile's outcome is told to: the metrics, and the cluster's Event.
func (s *Service) observe(sum reconciler.Summary, took time.Duration) {
	s.m.observe(sum, took)
	s.eventOfSummary(sum)
}

// submit is how an event from the API reaches Git: the reconciler commits it, and its
// answer is counted before its client hears it.
func (s *Service) submit(ctx context.Context, ev *v1alpha1.ClusterEvent) reconciler.Summary {
	start := time.Now()
	sum := s.reconciler.Submit(ctx, ev)
	s.observe(sum, time.Since(start))
	return sum
}

// converge is how the poller's views of Magnum reach Git: the reconciler derives and
// commits their events, each counted, with the time it waited, before the poller hears of
// it.
func (s *Service) converge(ctx context.Context, views []reconciler.MagnumView) [][]reconciler.Summary {
	out := s.reconciler.Converge(ctx, views)
	for _, sums := range out {
		for _, sum := range sums {
			s.observe(sum, sum.Timings.Answer)
		}
	}
	return out
}

// readReports does what each group's Report asks of serve, until the reconciler stops
// (done): count the group, ask Flux to fetch what it pushed, tell the log and Kubernetes
// what a delete or an upgrade step did.
func (s *Service) readReports(reports <-chan reconciler.Report, done <-chan struct{}) {
	for {
		select {
		case rep := <-reports:
			s.observeGroup(rep)
			for _, res := range rep.Results {
				for _, p := range res.Pushed {
					s.pushed(p.Namespace, p.Paths)
				}
				if res.Delete != nil {
					s.observeDelete(*res.Delete)
				}
				if res.Upgrade != nil {
					s.observeUpgrade(*res.Upgrade)
				}
			}
		case <-done:
			return
		}
	}
}

// Run starts the service and blocks until ctx ends; then new events get 503 and /readyz
// fails for ShutdownDelay while the listeners stay open, the events in flight finish, and
// Run returns.
func Run(ctx context.Context, o Options) error {
	s, err := newService(o)
	if err != nil {
		return err
	}
	return s.run(ctx)
}

func newService(o Options) (*Service, error) {
	if o.Pipeline == nil || o.Sink == nil {
		return nil, errors.New("service: Pipeline and Sink are required")
	}
	if (o.Tokens == nil || len(o.Tokens.Tokens()) == 0) && (o.TLS == nil || o.TLS.ClientAuth < tls.VerifyClientCertIfGiven) {
		return nil, &v1alpha1.FieldError{Field: "serve.token_files", Message: "no way to authenticate clients: set serve.token_files or serve.tls.client_ca_file"}
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Registry == nil {
		o.Registry = prometheus.NewRegistry()
	}
	if o.StatusOptions == nil {
		o.StatusOptions = status.DefaultOptions
	}
	if o.HealthInterval <= 0 {
		o.HealthInterval = time.Minute
	}
	if o.DeleteInterval <= 0 {
		o.DeleteInterval = 10 * time.Second
	}
	if o.ReadyInterval <= 0 {
		o.ReadyInterval = 5 * time.Second
	}
	s := &Service{o: o, m: newMetrics(o.Registry)}
	if o.Pipeline.Gate == nil {
		// A one-shot command plans each cluster once; serve plans them again and again.
		o.Pipeline.Gate = &gate.Gate{}
	}
	if o.SettledFile != "" && o.Build != "" {
		o.Pipeline.Gate.Build, o.Pipeline.Gate.File = o.Build, o.SettledFile
		if err := o.Pipeline.Gate.Load(); err != nil {
			o.Log.Warn("gate: the settled clusters kept at the last stop do not load; the first resync renders every cluster", "error", err)
		}
	}
	var err error
	if s.managed, err = manage(&o.Pipeline.Config.Config, o.Management, o.Log); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Service) run(ctx context.Context) error {
	o := s.o
	start := time.Now()
	if err := o.Sink.Repo.Fetch(ctx); err != nil {
		return fmt.Errorf("git: %w", err)
	}
	s.git.answered(start)
	clusters, bad, err := reconciler.LoadClusters(o.Sink.Repo, o.Pipeline.Config, start)
	if err != nil {
		return fmt.Errorf("reading the clusters in git: %w", err)
	}
	for _, f := range bad {
		o.Log.Warn("skipping a record that does not decode", "path", f)
	}
	s.clusters = clusters
	reports := make(chan reconciler.Report, 64)
	s.reconciler = &reconciler.Reconciler{Pipeline: o.Pipeline, Sink: o.Sink, Clusters: s.clusters,
		MaxGroup: o.MaxGroup, MaxWait: o.MaxWait, Reports: reports}
	ids, err := s.reconciler.ReadHistory(ctx)
	if err != nil {
		return fmt.Errorf("reading the event ids in git: %w", err)
	}
	o.Log.Info("clusters read from git", "count", clusters.Len(), "event_ids", ids, "duration", time.Since(start))
	s.reconciler.Start()
	if o.Poller != nil {
		o.Poller.Clusters, o.Poller.Converge = s.clusters, s.converge
	}
	if o.Review != nil && o.Review.Forge != nil {
		s.reviews = newReviews(*o.Review, o.Log, s.mergedReview)
	}
	s.api = &httpapi.Server{Submit: s.submit, Clusters: s.clusters, Tokens: o.Tokens,
		AcceptClientCerts: o.TLS != nil && o.TLS.ClientAuth >= tls.VerifyClientCertIfGiven,
		MaxBodyBytes:      o.MaxBodyBytes, Log: o.Log, Refused: s.m.refused}
	for _, m := range s.managed {
		if m.Status != nil {
			m.judge = &judge{src: m.Status, kinds: status.KindsOf(o.Pipeline.Config.Format == generator.FormatArgo),
				clusters: s.clusters, kustomization: m.Kustomization, options: o.StatusOptions,
				carries: s.carries, review: s.reviews.review, ttl: 2 * time.Second}
			m.judge.perNamespace = o.Pipeline.Config.LayoutNamespace()
		}
		if m.requester != nil {
			go m.requester.run(ctx)
		}
	}
	for _, m := range s.managed {
		if m.Events != nil && s.events == nil {
			s.events = newEvents(o.Log)
			go s.events.run(ctx)
		}
	}
	go s.requestUnapplied() // a judgement per cluster: not on the way to listening
	if s.judged() {
		s.api.Status, s.api.Applied = s.lookup, s.applied
		s.reconciler.Management = management{s}
	}
	reconcileCtx, stopReconciler := context.WithCancel(context.WithoutCancel(ctx))
	reconcilerDone := make(chan struct{})
	go func() { s.reconciler.Run(reconcileCtx); close(reconcilerDone) }()
	reportsDone := make(chan struct{})
	go func() { s.readReports(reports, reconcilerDone); close(reportsDone) }()

	servers, err := s.listen(ctx)
	if err != nil {
		stopReconciler()
		return err
	}
	loopsDone := make(chan struct{})
	go func() { s.lead(ctx); close(loopsDone) }()
	checkDone := make(chan struct{})
	go func() { s.checkGit(ctx); close(checkDone) }()

	<-ctx.Done()
	o.Log.Info("shutting down: new events get 503, finishing the events in flight", "delay", o.ShutdownDelay)
	s.api.Drain()
	for _, srv := range servers {
		// Clients on a kept-alive connection reconnect, through the Service, to another replica.
		srv.SetKeepAlivesEnabled(false)
	}
	// The listeners stay open while Kubernetes removes the endpoint (/readyz fails now):
	// closed at once, they would refuse the requests still routed here instead of answering
	// 503.
	time.Sleep(o.ShutdownDelay)
	shutdownCtx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
	defer cancel()
	for _, srv := range servers {
		if err := srv.Shutdown(shutdownCtx); err != nil {
			o.Log.Warn("shutting down: requests still open after the timeout", "error", err)
		}
	}
	stopReconciler()
	<-reconcilerDone
	<-reportsDone
	<-loopsDone
	<-checkDone
	return nil
}

// listen starts the API server (and the operations server when it has its own address).
func (s *Service) listen(ctx context.Context) ([]*http.Server, error) {
	o := s.o
	api := http.NewServeMux()
	h := s.api.Handler()
	api.Handle("/v1/", h)
	api.Handle("GET /version", h)
	ops := api
	if o.OpsListen != "" {
		ops = http.NewServeMux()
	}
	if s.reviews != nil && s.reviews.o.Webhook != nil {
		api.HandleFunc("POST /hooks/pull-requests", s.reviewWebhook)
	}
	ops.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	ops.HandleFunc("GET /readyz", s.readyz)
	ops.Handle("GET /metrics", promhttp.HandlerFor(o.Registry, promhttp.HandlerOpts{}))

	var servers []*http.Server
	serve := func(addr string, h http.Handler, tlsCfg *tls.Config) error {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return err
		}
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, TLSConfig: tlsCfg,
			BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) }}
		servers = append(servers, srv)
		go func() {
			var err error
			if tlsCfg != nil {
				err = srv.ServeTLS(ln, "", "")
			} else {
				err = srv.Serve(ln)
			}
			if err != nil && !errors.Is(err, http.ErrServerClosed) {
				o.Log.Error("server stopped", "address", addr, "error", err)
			}
		}()
		o.Log.Info("listening", "address", ln.Addr().String(), "tls", tlsCfg != nil)
		if o.Ready != nil && addr == o.Listen {
			o.Ready <- ln.Addr().String()
		}
		return nil
	}
	if err := serve(o.Listen, api, o.TLS); err != nil {
		return nil, fmt.Errorf("serve.listen: %w", err)
	}
	if o.OpsListen != "" {
		if err := serve(o.OpsListen, ops, nil); err != nil {
			return nil, fmt.Errorf("serve.ops_listen: %w", err)
		}
	}
	return servers, nil
}

// readyz: ready when the Git remote answers and the status cache has synced; not ready
// once shutting down, so that Kubernetes stops routing here. It answers from what is
// known already (the Git check's last result, the judge's snapshot): a probe of this
// unauthenticated port must not fetch under the repository's lock, stalling commits.
func (s *Service) readyz(w http.ResponseWriter, r *http.Request) {
	if s.api.Draining() {
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
		return
	}
	var problems []string
	if err := s.git.ready(time.Now(), s.gitStale()); err != nil {
		problems = append(problems, "git: "+err.Error())
	}
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	for _, m := range s.managed {
		if m.judge == nil {
			continue
		}
		// The judge's snapshot: probes every few seconds cost no extra listing.
		if _, err := m.judge.snapshot(ctx); err != nil {
			problems = append(problems, strings.TrimSpace("management cluster "+m.Name)+": "+err.Error())
		}
	}
	if len(problems) > 0 {
		http.Error(w, strings.Join(problems, "\n"), http.StatusServiceUnavailable)
		return
	}
	_, _ = w.Write([]byte("ok\n"))
}

// gitFetchTimeout bounds a readiness fetch.
const gitFetchTimeout = 10 * time.Second

// gitStale is how long the remote may go without an answer before the service is not
// ready: a few checks missed, e.g. a fetch stuck behind a push that hangs.
func (s *Service) gitStale() time.Duration { return 3*s.o.ReadyInterval + gitFetchTimeout }

// checkGit fetches every ReadyInterval, until ctx ends, unless a push showed the remote
// reachable meanwhile, and records the outcome for /readyz; then it reads the commits it
// did not make (catchUp). On every replica: each one's readiness and index are its own.
func (s *Service) checkGit(ctx context.Context) {
	every(ctx, s.o.ReadyInterval, s.checkGitOnce)
}

func (s *Service) checkGitOnce(ctx context.Context) {
	if time.Since(s.git.last()) < s.o.ReadyInterval {
		s.catchUp(ctx) // a push that had to fetch may have brought others' commits
		return
	}
	fctx, cancel := context.WithTimeout(ctx, gitFetchTimeout)
	at := time.Now()
	err := s.o.Sink.Repo.Fetch(fctx)
	cancel()
	switch {
	case ctx.Err() != nil:
		return
	case err != nil:
		if s.git.failed(err) {
			s.o.Log.Warn("git: the remote does not answer: not ready", "error", err)
		}
	default:
		if s.git.answered(at) {
			s.o.Log.Info("git: the remote answers again: ready")
		}
		s.catchUp(ctx)
	}
}

// every calls f each d until ctx ends; never when d is not positive.
func every(ctx context.Context, d time.Duration, f func(context.Context)) {
	if d <= 0 {
		return
	}
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f(ctx)
		}
	}
}

// catchUp reads what the other replicas (and people) committed: this replica then knows
// their clusters (GET, status, and as leader their deletes and health) and their event ids.
// The leader then publishes what those commits changed in the branch-per-namespace layout
// (a merged review reaches Flux within ReadyInterval, not at the next resync).
func (s *Service) catchUp(ctx context.Context) {
	n, err := s.reconciler.CatchUp(ctx)
	if err != nil {
		s.o.Log.Warn("git: reading new commits", "error", err)
		return
	}
	if n == 0 {
		return
	}
	s.o.Log.Debug("git: read new commits", "commits", n)
	if s.leading.Load() {
		if err := s.o.Sink.Publish(ctx, s.o.Pipeline.Config); err != nil {
			s.o.Log.Warn("git: publishing the namespaces' branches", "error", err)
		}
	}
}

// gitReady remembers when the Git remote last answered (a fetch or a push that landed)
// and the failure of the last fetch since.
type gitReady struct {
	mu  sync.Mutex
	at  time.Time
	err error
}

// answered records an answer of the remote at at; it reports whether the last fetch had failed.
func (g *gitReady) answered(at time.Time) (recovered bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if at.After(g.at) {
		g.at = at
	}
	recovered, g.err = g.err != nil, nil
	return recovered
}

// failed records a failed fetch; it reports whether it is the first since an answer, so
// that an outage is logged once.
func (g *gitReady) failed(err error) (first bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	first, g.err = g.err == nil, err
	return first
}

func (g *gitReady) last() time.Time {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.at
}

// ready is nil when the remote answered last and within stale of now.
func (g *gitReady) ready(now time.Time, stale time.Duration) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.err != nil {
		return g.err
	}
	if d := now.Sub(g.at); d > stale {
		return fmt.Errorf("no answer from the remote for %s", d.Round(time.Second))
	}
	return nil
}

// observeGroup records what a group cost; a push that landed shows the remote reachable.
func (s *Service) observeGroup(g reconciler.Report) {
	s.m.observeGroup(g)
	if g.Pushes > 0 && s.git.answered(time.Now()) {
		s.o.Log.Info("git: the remote answers again: ready")
	}
}

// lead runs the background loops while this replica leads.
func (s *Service) lead(ctx context.Context) {
	for ctx.Err() == nil {
		lctx := ctx
		if s.o.Elect != nil {
			var err error
			if lctx, err = s.o.Elect(ctx); err != nil {
				if ctx.Err() == nil {
					s.o.Log.Error("leader election", "error", err)
					time.Sleep(time.Second)
				}
				continue
			}
		}
		// What Magnum holds may have changed while another replica led.
		s.knownHealth.Clear()
		s.m.leader.Set(1)
		s.leading.Store(true)
		s.o.Log.Info("leading: running the delete, health and resync loops")
		if s.o.Elect != nil {
			go s.requestUnapplied() // what another replica pushed and did not ask Flux to fetch
		}
		s.loops(lctx)
		s.leading.Store(false)
		s.m.leader.Set(0)
		s.m.clusters.Reset() // a follower judges nothing: only the leader's count stands
		if s.o.Elect == nil {
			return
		}
	}
}

// loops runs the leader's loops until ctx ends.
func (s *Service) loops(ctx context.Context) {
	var wg sync.WaitGroup
	loop := func(d time.Duration, first bool, f func(context.Context)) {
		wg.Go(func() {
			if first {
				f(ctx)
			}
			every(ctx, d, f)
		})
	}
	if s.judged() {
		loop(s.o.DeleteInterval, true, s.requeue)
		if s.o.Reporter != nil {
			loop(s.o.HealthInterval, false, s.health)
		}
	}
	loop(s.o.ResyncInterval, true, s.resync)
	if s.reviews != nil {
		loop(s.reviews.o.Interval, true, func(ctx context.Context) { s.reviews.supersede(ctx, s.clusters.All()) })
	}
	if s.o.Poller != nil {
		wg.Go(func() { s.o.Poller.Run(ctx) })
	}
	wg.Wait()
}

// health reports every cluster's health to Magnum, writing only what changed.
func (s *Service) health(ctx context.Context) {
	live := map[string]bool{}
	defer s.forgetHealth(live)
	byStatus := map[string]int{}
	defer s.m.judgedClusters(byStatus)
	for _, rec := range s.clusters.All() {
		if rec.Event.Operation == v1alpha1.DeleteCluster {
			continue
		}
		j := s.judgeOf(rec)
		if j == nil {
			continue
		}
		live[rec.Event.Cluster.UUID] = true
		known, err := s.known(ctx, rec.Event.Cluster.UUID)
		if err != nil {
			s.m.health.WithLabelValues("error").Inc()
			s.o.Log.Warn("reading the cluster's health in Magnum", "cluster", rec.Event.Cluster.UUID, "error", err)
			continue
		}
		rep := j.evaluate(ctx, rec)
		byStatus[string(rep.Status)]++
		sent, err := s.o.Reporter.Report(ctx, rep, known)
		switch {
		case errors.Is(err, report.ErrNotUpdatable):
			s.m.health.WithLabelValues("deferred").Inc()
		case err != nil:
			s.m.health.WithLabelValues("error").Inc()
			s.o.Log.Warn("reporting health to Magnum", "cluster", rec.Event.Cluster.UUID, "error", err)
		case sent:
			s.m.health.WithLabelValues("sent").Inc()
			s.remember(rec.Event.Cluster.UUID, rep)
		default:
			s.m.health.WithLabelValues("unchanged").Inc()
		}
	}
}

// known is what Magnum holds for a cluster: what this leader last wrote, or, the first
// time, what Magnum answers, so that a new leader writes only what differs.
func (s *Service) known(ctx context.Context, uuid string) (report.Known, error) {
	if k, ok := s.knownHealth.Load(uuid); ok {
		return k.(report.Known), nil
	}
	k, err := s.o.Reporter.Known(ctx, uuid)
	if err != nil {
		return report.Known{}, err
	}
	s.knownHealth.Store(uuid, k)
	return k, nil
}

// forgetHealth drops what Magnum was told of the clusters not in live (deleted, or being
// deleted): nothing reports their health again, and the map would otherwise grow with
// every cluster the service ever held.
func (s *Service) forgetHealth(live map[string]bool) {
	s.knownHealth.Range(func(uuid, _ any) bool {
		if !live[uuid.(string)] {
			s.knownHealth.Delete(uuid)
		}
		return true
	})
}

func (s *Service) remember(uuid string, r status.Report) {
	s.knownHealth.Store(uuid, report.Known{HealthStatus: r.HealthStatus, HealthReason: r.HealthReason, NodeCount: r.NodeCount})
}

// resync renders every cluster again from its record and commits what moved.
func (s *Service) resync(ctx context.Context) {
	start := time.Now()
	last := time.Now()
	commits := 0
	if err := s.o.Sink.Publish(ctx, s.o.Pipeline.Config); err != nil {
		s.o.Log.Error("resync: publishing the namespaces' branches", "error", err)
	}
	rendered := 0 // the clusters the gate did not know to be as rendered
	refused := func(record string, err error) {
		rendered++
		s.o.Log.Error("resync: the cluster's record does not render; left as it is", "record", record, "error", err)
	}
	o := s.reconciler.ResyncOptions(refused, func(rec *reconciler.ResyncRecord, sum reconciler.Summary) {
		rendered++
		switch {
		case sum.Err() != nil:
			s.o.Log.Error("resync commit", "record", rec.Path, "error", sum.Err())
		case !sum.NoOp:
			commits++
			s.m.resyncChanged.Inc()
		}
	})
	o.Progress = func(done, total int) {
		if time.Since(last) > 5*time.Second || done == total {
			last = time.Now()
			s.o.Log.Info("resync", "done", done, "total", total, "rate", float64(done)/time.Since(start).Seconds())
		}
	}
	err := s.o.Pipeline.ResyncRecords(ctx, s.o.Sink.Repo, o)
	if err != nil {
		s.o.Log.Error("resync", "error", err, "changed", commits)
		return
	}
	s.m.resync.Observe(time.Since(start).Seconds())
	s.o.Log.Info("resync done", "changed", commits, "rendered", rendered, "duration", time.Since(start))
	if err := s.o.Pipeline.Gate.Save(); err != nil {
		s.o.Log.Warn("resync: the settled clusters are not kept for the next start", "error", err)
	}
}
