package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/internal/buildinfo"
	"github.com/magnum-gitops/magnum-gitops/internal/config"
	"github.com/magnum-gitops/magnum-gitops/reconciler"
	"github.com/magnum-gitops/magnum-gitops/reconciler/httpapi"
	"github.com/magnum-gitops/magnum-gitops/reconciler/openstack"
	"github.com/magnum-gitops/magnum-gitops/reconciler/service"
	"github.com/magnum-gitops/magnum-gitops/status"
	"github.com/magnum-gitops/magnum-gitops/status/kube"
	"github.com/magnum-gitops/magnum-gitops/status/report"
)

type serveOptions struct {
	configFile, listen, kubeconfig, objectsFile, logFormat, logLevel, source string
	healthInterval, resyncInterval, shutdownDelay                            time.Duration
	insecurePlaintext, leaderElect                                           bool
	// shutdownDelaySet: --shutdown-delay was given, so it overrides serve.shutdown_delay.
	shutdownDelaySet bool
}

// defaultShutdownDelay is about how long Kubernetes takes to remove a terminating Pod's
// endpoint everywhere (kube-proxy, ingress controllers).
const defaultShutdownDelay = 5 * time.Second

func newServeCommand() *cobra.Command {
	o := &serveOptions{}
	cmd := &cobra.Command{
		Use:   "serve --config FILE",
		Short: "Run the service: the event API, status API, delete choreography, health and resync",
		Long: `Run magnum-gitops as a service next to Magnum.

  POST /v1/events                  a ClusterEvent; answered once the commit is pushed
  GET  /v1/clusters/{uuid}         the last event, its commit, whether Flux applied it
  GET  /v1/clusters/{uuid}/status  Magnum status and health from the management cluster
  GET  /version                    the build and the event API versions it accepts (no token)
  GET  /healthz, /readyz, /metrics

Events that arrive together are group-committed (one commit each, one push per group).
The leader replica (a Kubernetes Lease) also runs the second phase of deletes, health
reporting to Magnum and resync. SIGTERM drains: new events get 503 and /readyz fails for
--shutdown-delay while the listeners stay open, then those in flight finish (up to 30s).`,
		Example: `  magnum-gitops serve --config /etc/magnum-gitops/config.yaml
  magnum-gitops serve --config config.yaml --objects objects.yaml --log-format json --log-level debug`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			o.shutdownDelaySet = cmd.Flags().Changed("shutdown-delay")
			return o.run(ctx, cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.configFile, "config", "", "configuration file (magnum, flux, git, sops, serve sections) (required)")
	f.StringVar(&o.listen, "listen", "", "API address (default: serve.listen, else 127.0.0.1:8080)")
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "management cluster kubeconfig (default: $KUBECONFIG, ~/.kube/config, in-cluster): leader election, and each management_clusters entry without kubeconfig_file")
	f.StringVar(&o.objectsFile, "objects", "", "judge status from the objects in this YAML file (read again on change) instead of a management cluster")
	f.StringVar(&o.logFormat, "log-format", "text", "log format: text or json")
	f.StringVar(&o.logLevel, "log-level", "info", "least severe log level written: debug, info, warn or error")
	f.StringVar(&o.source, "source", "api", "where events come from: api (POST /v1/events), or magnum (also poll Magnum's API; needs the openstack section)")
	f.DurationVar(&o.healthInterval, "health-interval", time.Minute, "how often health is reported to Magnum (needs the openstack section)")
	f.DurationVar(&o.resyncInterval, "resync-interval", time.Hour, "how often every cluster is rendered again from Git (0: at start only)")
	f.DurationVar(&o.shutdownDelay, "shutdown-delay", defaultShutdownDelay, "on SIGTERM, how long to keep answering 503 (and failing /readyz) before closing the listeners; overrides serve.shutdown_delay")
	f.BoolVar(&o.leaderElect, "leader-elect", true, "elect one replica (Kubernetes Lease) to run the background loops")
	f.BoolVar(&o.insecurePlaintext, "insecure-plaintext-secrets", false, "commit Secrets unencrypted; never on a shared repository")
	_ = cmd.MarkFlagRequired("config")
	return cmd
}

func (o *serveOptions) run(ctx context.Context, stderr io.Writer) error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return config.Invalid(fmt.Errorf("--log-level: unknown level %q (debug, info, warn, error)", o.logLevel))
	}
	ho := &slog.HandlerOptions{Level: level}
	var h slog.Handler = slog.NewTextHandler(stderr, ho)
	switch o.logFormat {
	case "text":
	case "json":
		h = slog.NewJSONHandler(stderr, ho)
	default:
		return config.Invalid(fmt.Errorf("--log-format: unknown format %q (text, json)", o.logFormat))
	}
	log := slog.New(h)
	// client-go (leader election, informers) logs through klog, controller-runtime through
	// its logr sink: both into the same handler, so a JSON log stays JSON.
	klog.SetSlogLogger(log)
	ctrllog.SetLogger(logr.FromSlogHandler(h))
	info := buildinfo.Read()
	logVersion(log, info)
	file, err := loadConfig(ctx, o.configFile)
	if err != nil {
		return err
	}
	// Before the clone: a listen address that would carry events in plain HTTP over a
	// network is refused at once, as bad input.
	listen := cmp.Or(o.listen, file.Serve.Listen, "127.0.0.1:8080")
	plainOutside, err := file.Serve.CheckListen(listen, o.listen != "")
	if err != nil {
		return config.Invalid(err)
	}
	if plainOutside {
		log.Warn("serving the event API in plain HTTP on an address other than loopback, as serve.allow_plain_http allows: "+
			"only a TLS-terminating proxy or ingress in front keeps events' secrets off the network", "listen", listen)
	}
	reg := serveRegistry(info)
	refused := reloadRefusals(reg, log)
	p, err := openPipeline(file, o.insecurePlaintext, refused)
	if err != nil {
		return err
	}
	var settled string
	if file.Git.CacheDir != "" {
		// The clone outlives the process: so does what the gate knows to be as rendered,
		// under this build (none for a build from modified sources).
		settled = filepath.Join(file.Git.CacheDir, settledFile)
	} else {
		// In memory, go-git's store keeps every object of the history in the heap, which
		// then grows with every commit the service makes (BenchmarkOpen): serve always
		// keeps its clone on disk.
		dir, err := os.MkdirTemp("", "magnum-gitops-git-")
		if err != nil {
			return fmt.Errorf("git: a directory for the clone (or set git.cache_dir): %w", err)
		}
		defer os.RemoveAll(dir)
		file.Git.CacheDir = dir
		log.Info("git: the clone is kept in a temporary directory, removed at exit; set git.cache_dir to keep it across restarts", "dir", dir)
	}
	sink, err := openGitSink(ctx, file, refused)
	if err != nil {
		return err
	}
	var tokens httpapi.TokenSource
	if len(file.Serve.TokenFiles) > 0 {
		if tokens, err = config.OpenTokenFiles(file.Serve.TokenFiles, refused("token_files")); err != nil {
			return config.Invalid(err)
		}
	}
	tlsCfg, err := file.Serve.TLSConfig(refused("tls"))
	if err != nil {
		return config.Invalid(err)
	}
	so := service.Options{Pipeline: p, Sink: sink,
		Listen: listen, OpsListen: file.Serve.OpsListen, TLS: tlsCfg,
		Tokens: tokens, MaxBodyBytes: file.Serve.MaxBodyBytes,
		MaxGroup: file.Serve.Group.MaxEvents, MaxWait: file.Serve.Group.MaxWait.Duration,
		ShutdownDelay:  o.shutdownDelayFrom(&file.Serve),
		HealthInterval: o.healthInterval, ResyncInterval: o.resyncInterval, Log: log, Registry: reg,
		StatusOptions: serveStatusOptions(file), SettledFile: settled, Build: buildID()}
	if so.Review, err = reviewOptions(ctx, file, refused, log); err != nil {
		return config.Invalid(err)
	}
	if err := o.management(ctx, file, &so); err != nil {
		return err
	}
	if err := o.openstack(ctx, file, p, &so); err != nil {
		return err
	}
	return service.Run(ctx, so)
}

// serveStatusOptions are serve's status judgement: the defaults, with the serve section's
// machine-failure deadline and the control plane conditions of [capi_helm].
func serveStatusOptions(file *config.File) func(time.Time) status.Options {
	return func(now time.Time) status.Options {
		o := configuredStatusOptions(file, now)
		o.MachineFailureDeadline = file.Serve.MachineFailureDeadlineOr(o.MachineFailureDeadline)
		return o
	}
}

// configuredStatusOptions are the default status options with what the configuration
// says of them: the KubeadmControlPlane conditions a ready control plane must have
// (magnum.capi_helm.k8s_control_plane_resource_conditions, the driver's option).
func configuredStatusOptions(file *config.File, now time.Time) status.Options {
	o := status.DefaultOptions(now)
	if c := file.Magnum.CapiHelm.K8sControlPlaneResourceConditions; len(c) > 0 {
		o.ControlPlaneConditions = c
	}
	return o
}

// management connects to each management cluster: those of management_clusters, or the
// one of --kubeconfig. serve.kustomization and serve.reconcile_request are the defaults of
// each; leader election runs on --kubeconfig's.
func (o *serveOptions) management(ctx context.Context, file *config.File, so *service.Options) error {
	entries := file.ManagementClusters
	if len(entries) == 0 {
		entries = []generator.ManagementCluster{{}}
	}
	for _, e := range entries {
		rr := cmp.Or(e.ReconcileRequest, file.Serve.ReconcileRequest)
		m := service.ManagementCluster{Name: e.Name,
			Kustomization: cmp.Or(e.Kustomization, file.Serve.Kustomization, defaultApplier(file))}
		if o.objectsFile != "" {
			if rr.Name != "" {
				return config.Invalid(errors.New("serve.reconcile_request: needs a management cluster, not --objects"))
			}
			m.Status = fileSource(o.objectsFile)
			so.Management = append(so.Management, m)
			continue
		}
		c, cfg, err := kube.StartCache(ctx, cmp.Or(e.KubeconfigFile, o.kubeconfig), 2*time.Minute)
		if err != nil {
			if e.Name != "" {
				return fmt.Errorf("management cluster %s: %w", e.Name, err)
			}
			return err
		}
		m.Status = kube.Source{Reader: c}
		if m.Kube, err = client.New(cfg, client.Options{}); err != nil {
			return err
		}
		var stop func()
		if m.Events, stop, err = eventRecorder(cfg); err != nil {
			return err
		}
		context.AfterFunc(ctx, stop)
		if rr.Name != "" {
			m.ReconcileRequest = service.ReconcileRequest{Namespace: cmp.Or(rr.Namespace, defaultRequestNamespace(file)), Name: rr.Name}
		}
		so.Management = append(so.Management, m)
	}
	if o.leaderElect && o.objectsFile == "" {
		cfg, err := kube.RESTConfig(o.kubeconfig)
		if err != nil {
			return err
		}
		le := file.Serve.LeaderElection
		so.Elect = kube.LeaderElector(cfg, cmp.Or(le.Namespace, "magnum-gitops"), cmp.Or(le.Name, "magnum-gitops"))
	}
	return nil
}

// shutdownDelayFrom is --shutdown-delay when given, else serve.shutdown_delay when set
// (0 included), else the default.
func (o *serveOptions) shutdownDelayFrom(c *config.Serve) time.Duration {
	if !o.shutdownDelaySet && c.ShutdownDelay != nil {
		return c.ShutdownDelay.Duration
	}
	return o.shutdownDelay
}

// openstack wires what the openstack section enables: health reporting to Magnum, the
// resolver for events that leave "resolved" out, and (--source magnum) the poller.
func (o *serveOptions) openstack(ctx context.Context, file *config.File, p *reconciler.Pipeline, so *service.Options) error {
	if o.source != "api" && o.source != "magnum" {
		return config.Invalid(fmt.Errorf("--source: unknown source %q (api, magnum)", o.source))
	}
	if !openstackConfigured(&file.OpenStack) {
		if o.source == "magnum" {
			return config.Invalid(errors.New("--source magnum: needs the openstack section (or OS_* variables)"))
		}
		so.Log.Info("no OpenStack configured: events must carry resolved, and health is not reported to Magnum")
		return nil
	}
	cloud, err := connectOpenStack(ctx, &file.OpenStack)
	if err != nil {
		return err
	}
	// Events that leave "resolved" out are resolved with the service's credentials.
	p.Resolvers = append([]reconciler.Resolver{openstackResolver(&file.OpenStack, cloud)}, p.Resolvers...)
	// After a delete's second phase, the application credentials the service created for
	// the cluster (the poller's) go too. The driver shim deletes those it created with the
	// user's token itself.
	if idc, err := cloud.Identity(); err == nil {
		creds := &openstack.AppCredentials{Identity: idc}
		so.OnSecretsRemoved = func(ctx context.Context, rec reconciler.ClusterRecord) error {
			n, err := creds.DeleteCluster(ctx, "", rec.Event.Cluster.UUID)
			if n > 0 {
				so.Log.Info("application credentials deleted", "cluster", rec.Event.Cluster.UUID, "count", n)
			}
			return err
		}
	}
	if c, err := cloud.ContainerInfra(); err == nil {
		so.Reporter = &report.MagnumReporter{Client: c}
	} else {
		so.Log.Warn("no Magnum endpoint in the catalog: health is not reported", "error", err)
	}
	if o.source == "magnum" {
		if so.Poller, err = magnumPoller(&file.OpenStack, cloud, so.Log); err != nil {
			return config.Invalid(err)
		}
	}
	return nil
}

// fileSource reads status objects from a file each time it is asked, so that a test or a
// demo can change what the "management cluster" holds while the service runs.
type fileSource string

// List implements status.Source.
func (f fileSource) List(ctx context.Context, gvk schema.GroupVersionKind) ([]*unstructured.Unstructured, error) {
	fh, err := os.Open(string(f))
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	objs, err := status.LoadObjects(fh)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", string(f), err)
	}
	return status.StaticSource(objs).List(ctx, gvk)
}

// defaultApplier names (namespace/name) what applies the repository unless
// serve.kustomization does: Flux's Kustomization as deploy/flux has it, or in Argo mode the
// parent Application of deploy/argocd, in argo.namespace.
// defaultRequestNamespace is serve.reconcile_request's namespace when it names none: Flux's,
// or in Argo mode Argo CD's (argo.namespace).
func defaultRequestNamespace(file *config.File) string {
	if file.Format == generator.FormatArgo {
		return cmp.Or(file.Argo.Namespace, "argocd")
	}
	return "flux-system"
}

func defaultApplier(file *config.File) string {
	if file.Format == generator.FormatArgo {
		return cmp.Or(file.Argo.Namespace, "argocd") + "/magnum-clusters"
	}
	return status.DefaultKustomization
}
