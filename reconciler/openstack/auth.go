package openstack

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	gcopenstack "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/config/clouds"
)

// DefaultTimeout bounds each HTTP request to OpenStack when Config.Timeout is zero.
const DefaultTimeout = 60 * time.Second

// envCloud names the cloud built from OS_* variables, as openstacksdk does.
const envCloud = "envvars"

// Config says how to reach OpenStack, the way operators configure every OpenStack client:
// a clouds.yaml entry, or OS_* environment variables. The remaining fields override what
// those say. It holds no secret itself.
type Config struct {
	// Cloud names the clouds.yaml entry. Empty means $OS_CLOUD; when that is empty too,
	// the OS_* variables (OS_AUTH_URL, OS_USERNAME, OS_APPLICATION_CREDENTIAL_ID, …)
	// describe the credentials.
	Cloud string `json:"cloud,omitempty"`
	// CloudsFile is the clouds.yaml path. Empty means $OS_CLIENT_CONFIG_FILE, else
	// ./clouds.yaml, ~/.config/openstack/clouds.yaml, /etc/openstack/clouds.yaml.
	CloudsFile string `json:"clouds_file,omitempty"`
	// CAFile is a PEM bundle trusted for TLS (clouds.yaml cacert, $OS_CACERT).
	CAFile string `json:"ca_file,omitempty"`
	// Insecure skips TLS verification (clouds.yaml verify: false, $OS_INSECURE).
	Insecure *bool `json:"insecure,omitempty"`
	// Region selects endpoints from the catalog (clouds.yaml region_name, $OS_REGION_NAME).
	Region string `json:"region,omitempty"`
	// Interface is public, internal or admin (clouds.yaml interface, $OS_INTERFACE);
	// default public.
	Interface string `json:"interface,omitempty"`
	// Timeout bounds each HTTP request; zero means DefaultTimeout.
	Timeout time.Duration `json:"timeout,omitempty"`
	// Transport, when set, carries every request instead of a TLS-configured clone of
	// http.DefaultTransport (CAFile and Insecure then do not apply). Tests count requests
	// with it.
	Transport http.RoundTripper `json:"-"`
}

// Cloud is an authenticated session: a token (renewed when it expires) and its catalog.
type Cloud struct {
	// Provider holds the token and the HTTP client.
	Provider *gophercloud.ProviderClient
	// Endpoint selects endpoints from the catalog (region and interface).
	Endpoint gophercloud.EndpointOpts
}

// Connect authenticates with the credentials cfg points at and returns the session.
func Connect(ctx context.Context, cfg Config) (*Cloud, error) {
	opts, err := parseOptions(cfg)
	if err != nil {
		return nil, err
	}
	ao, eo, tlsConfig, err := clouds.Parse(opts...)
	if err != nil {
		return nil, fmt.Errorf("openstack: reading the cloud configuration: %w", err)
	}
	if ao.IdentityEndpoint == "" {
		return nil, errors.New("openstack: the cloud configuration has no auth_url")
	}
	// A long-running service outlives its token: re-authenticate on 401.
	ao.AllowReauth = true

	pc, err := gcopenstack.NewClient(ao.IdentityEndpoint)
	if err != nil {
		return nil, fmt.Errorf("openstack: auth_url %q: %w", ao.IdentityEndpoint, err)
	}
	transport := cfg.Transport
	if transport == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.TLSClientConfig = tlsConfig
		transport = t
	}
	pc.HTTPClient = http.Client{Transport: transport, Timeout: cmp.Or(cfg.Timeout, DefaultTimeout)}
	pc.UserAgent.Prepend("magnum-gitops")
	if err := gcopenstack.Authenticate(ctx, pc, ao); err != nil {
		return nil, fmt.Errorf("openstack: authenticating to %s as %s: %w", ao.IdentityEndpoint, who(ao), err)
	}
	return &Cloud{Provider: pc, Endpoint: eo}, nil
}

// parseOptions turns cfg into clouds.Parse options: the clouds.yaml entry, or a cloud
// built from the OS_* variables, plus the overrides.
func parseOptions(cfg Config) ([]clouds.ParseOption, error) {
	var opts []clouds.ParseOption
	name := cmp.Or(cfg.Cloud, os.Getenv("OS_CLOUD"))
	switch {
	case name != "":
		opts = append(opts, clouds.WithCloudName(name))
		if cfg.CloudsFile != "" {
			opts = append(opts, clouds.WithLocations(cfg.CloudsFile))
		}
	case os.Getenv("OS_AUTH_URL") != "":
		doc, err := json.Marshal(clouds.Clouds{Clouds: map[string]clouds.Cloud{envCloud: cloudFromEnv()}})
		if err != nil {
			return nil, err
		}
		// JSON is YAML: clouds.Parse reads the document like a clouds.yaml.
		opts = append(opts, clouds.WithCloudName(envCloud), clouds.WithCloudsYAML(bytes.NewReader(doc)))
	default:
		return nil, errors.New("openstack: no credentials: set a cloud (or OS_CLOUD) from clouds.yaml, or the OS_* variables (OS_AUTH_URL, …)")
	}
	if cfg.CAFile != "" {
		opts = append(opts, clouds.WithCACertPath(cfg.CAFile))
	}
	insecure := cfg.Insecure
	if insecure == nil {
		if v, err := strconv.ParseBool(os.Getenv("OS_INSECURE")); err == nil {
			insecure = &v
		}
	}
	if insecure != nil {
		opts = append(opts, clouds.WithInsecure(*insecure))
	}
	if cfg.Region != "" {
		opts = append(opts, clouds.WithRegion(cfg.Region))
	}
	if cfg.Interface != "" {
		switch strings.TrimSuffix(cfg.Interface, "URL") {
		case "public", "internal", "admin":
		default:
			return nil, fmt.Errorf("openstack: interface %q: want public, internal or admin", cfg.Interface)
		}
		opts = append(opts, clouds.WithEndpointType(cfg.Interface))
	}
	return opts, nil
}

// cloudFromEnv maps the OS_* variables python-openstackclient reads onto a clouds.yaml
// entry. OS_REGION_NAME, OS_INTERFACE, OS_CACERT, OS_CERT and OS_KEY are read by
// clouds.Parse itself.
func cloudFromEnv() clouds.Cloud {
	env := os.Getenv
	return clouds.Cloud{
		AuthInfo: &clouds.AuthInfo{
			AuthURL:                     env("OS_AUTH_URL"),
			Token:                       env("OS_TOKEN"),
			Username:                    env("OS_USERNAME"),
			UserID:                      cmp.Or(env("OS_USER_ID"), env("OS_USERID")),
			Password:                    env("OS_PASSWORD"),
			ApplicationCredentialID:     env("OS_APPLICATION_CREDENTIAL_ID"),
			ApplicationCredentialName:   env("OS_APPLICATION_CREDENTIAL_NAME"),
			ApplicationCredentialSecret: env("OS_APPLICATION_CREDENTIAL_SECRET"),
			SystemScope:                 env("OS_SYSTEM_SCOPE"),
			ProjectName:                 cmp.Or(env("OS_PROJECT_NAME"), env("OS_TENANT_NAME")),
			ProjectID:                   cmp.Or(env("OS_PROJECT_ID"), env("OS_TENANT_ID")),
			UserDomainName:              env("OS_USER_DOMAIN_NAME"),
			UserDomainID:                env("OS_USER_DOMAIN_ID"),
			ProjectDomainName:           env("OS_PROJECT_DOMAIN_NAME"),
			ProjectDomainID:             env("OS_PROJECT_DOMAIN_ID"),
			DomainName:                  env("OS_DOMAIN_NAME"),
			DomainID:                    env("OS_DOMAIN_ID"),
			TrustID:                     env("OS_TRUST_ID"),
		},
	}
}

// who names the credentials for an error message, never their secret part.
func who(ao gophercloud.AuthOptions) string {
	switch {
	case ao.ApplicationCredentialID != "":
		return "application credential " + ao.ApplicationCredentialID
	case ao.ApplicationCredentialName != "":
		return "application credential " + ao.ApplicationCredentialName
	case ao.UserID != "":
		return "user " + ao.UserID
	case ao.Username != "":
		return "user " + ao.Username
	case ao.TokenID != "":
		return "a token"
	}
	return "(no user)"
}
