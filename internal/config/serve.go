package config

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/magnum-gitops/magnum-gitops/generator"
)

// Serve is the --config "serve:" section.
type Serve struct {
	// Listen is the event and status API's address (default 127.0.0.1:8080).
	Listen string `json:"listen,omitempty"`
	// OpsListen serves /healthz, /readyz and /metrics without authentication; empty
	// serves them on Listen.
	OpsListen string `json:"ops_listen,omitempty"`
	// TokenFiles hold the accepted bearer tokens, one per file.
	TokenFiles []string `json:"token_files,omitempty"`
	TLS        struct {
		CertFile string `json:"cert_file,omitempty"`
		KeyFile  string `json:"key_file,omitempty"`
		// ClientCAFile turns on mutual TLS: a client certificate signed by it is accepted
		// in place of a token.
		ClientCAFile string `json:"client_ca_file,omitempty"`
	} `json:"tls,omitempty"`
	// AllowPlainHTTP lets the API serve plain HTTP on an address other than loopback,
	// for a TLS-terminating proxy or ingress in front: events carry CA private keys and
	// application credentials, so without TLS they must not cross a network unasked.
	AllowPlainHTTP bool  `json:"allow_plain_http,omitempty"`
	MaxBodyBytes   int64 `json:"max_body_bytes,omitempty"`
	Group          struct {
		MaxEvents int                `json:"max_events,omitempty"`
		MaxWait   generator.Duration `json:"max_wait,omitempty"`
	} `json:"group,omitempty"`
	// ShutdownDelay is how long, on SIGTERM, new events get 503 and /readyz fails before
	// the listeners close (default 5s; --shutdown-delay overrides). A pointer: 0s is a choice.
	ShutdownDelay *generator.Duration `json:"shutdown_delay,omitempty"`
	// MachineFailureDeadline is how long a Machine may report an infrastructure error (a
	// Nova quota error, a flavor not found) before its cluster's operation is FAILED
	// (default 15m; 0s: never, the operation's own timeout decides). Until then the
	// error is the operation's status_reason. A pointer: 0s is a choice.
	MachineFailureDeadline *generator.Duration `json:"machine_failure_deadline,omitempty"`
	// Kustomization is the Flux Kustomization (namespace/name) that applies the repository.
	Kustomization string `json:"kustomization,omitempty"`
	// ReconcileRequest names the Flux GitRepository to annotate with
	// reconcile.fluxcd.io/requestedAt after each push (what `flux reconcile source git`
	// does), so Flux fetches the commit at once instead of at its next interval. Needs
	// patch on gitrepositories (deploy/service/rbac.yaml); namespace defaults to flux-system.
	// In Argo mode it names the Application that syncs the repository, refreshed with
	// argocd.argoproj.io/refresh: normal (as `argocd app get --refresh` does); namespace
	// defaults to argo.namespace, and it needs patch on that Application.
	ReconcileRequest generator.ReconcileRequest `json:"reconcile_request,omitempty"`
	// LeaderElection names the Lease the replicas elect their leader with.
	LeaderElection struct {
		Namespace string `json:"namespace,omitempty"`
		Name      string `json:"name,omitempty"`
	} `json:"leader_election,omitempty"`
}

// Validate checks the section's values that need no file; Load calls it.
func (c *Serve) Validate() error {
	switch {
	case c.ShutdownDelay != nil && c.ShutdownDelay.Duration < 0:
		return errors.New("serve.shutdown_delay: must not be negative")
	case c.MachineFailureDeadline != nil && c.MachineFailureDeadline.Duration < 0:
		return errors.New("serve.machine_failure_deadline: must not be negative (0s: never)")
	case c.AllowPlainHTTP && c.tlsSet():
		return errors.New("serve.allow_plain_http: true with serve.tls set: the API serves HTTPS, nothing plain; remove one of them")
	}
	return nil
}

// MachineFailureDeadlineOr is serve.machine_failure_deadline, or def when it is not set.
func (c *Serve) MachineFailureDeadlineOr(def time.Duration) time.Duration {
	if c.MachineFailureDeadline == nil {
		return def
	}
	return c.MachineFailureDeadline.Duration
}

// TLSConfig builds the API's TLS configuration; nil serves plain HTTP. The certificate and
// key are read again when their files change (a renewed certificate is served to new
// connections without a restart); new files that do not make a key pair leave the last
// one served, and onInvalid, when set, is told.
func (c *Serve) TLSConfig(onInvalid func(error)) (*tls.Config, error) {
	t := c.TLS
	if t.CertFile == "" && t.KeyFile == "" {
		if t.ClientCAFile != "" {
			return nil, errors.New("serve.tls.client_ca_file: needs serve.tls.cert_file and key_file")
		}
		return nil, nil
	}
	kp, err := openKeyPair(t.CertFile, t.KeyFile, onInvalid)
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{GetCertificate: kp.certificate, MinVersion: tls.VersionTLS12}
	if t.ClientCAFile != "" {
		pem, err := os.ReadFile(t.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("serve.tls.client_ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, errors.New("serve.tls.client_ca_file: no PEM certificate in it")
		}
		// Verified when given; requests without one need a token.
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.VerifyClientCertIfGiven
	}
	return cfg, nil
}
