package openstack_test

import (
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/config/clouds"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/tokens"
	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/internal/testenv/keystone"
	"github.com/magnum-gitops/magnum-gitops/reconciler/openstack"
)

func TestMain(m *testing.M) { keystone.Main(m) }

// osVars are the variables Connect reads; each test starts without them so the
// developer's or CI's environment cannot leak in.
var osVars = []string{"OS_CLOUD", "OS_CLIENT_CONFIG_FILE", "OS_AUTH_URL", "OS_USERNAME", "OS_USER_ID",
	"OS_USERID", "OS_PASSWORD", "OS_PROJECT_NAME", "OS_PROJECT_ID", "OS_TENANT_NAME", "OS_TENANT_ID",
	"OS_USER_DOMAIN_NAME", "OS_USER_DOMAIN_ID", "OS_PROJECT_DOMAIN_NAME", "OS_PROJECT_DOMAIN_ID",
	"OS_DOMAIN_NAME", "OS_DOMAIN_ID", "OS_APPLICATION_CREDENTIAL_ID", "OS_APPLICATION_CREDENTIAL_NAME",
	"OS_APPLICATION_CREDENTIAL_SECRET", "OS_TOKEN", "OS_SYSTEM_SCOPE", "OS_TRUST_ID", "OS_REGION_NAME",
	"OS_INTERFACE", "OS_CACERT", "OS_CERT", "OS_KEY", "OS_INSECURE"}

func clearOSEnv(t *testing.T) {
	for _, v := range osVars {
		t.Setenv(v, "")
	}
}

// writeClouds writes a clouds.yaml holding one cloud, "test", and returns its path.
func writeClouds(t *testing.T, c clouds.Cloud) string {
	t.Helper()
	doc, err := yaml.Marshal(clouds.Clouds{Clouds: map[string]clouds.Cloud{"test": c}})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "clouds.yaml")
	if err := os.WriteFile(p, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// passwordCloud is the clouds.yaml entry operators write for a user: password auth scoped
// to the project by name.
func passwordCloud(ks *keystone.Keystone, u keystone.User, projectName, region string) clouds.Cloud {
	return clouds.Cloud{
		AuthInfo: &clouds.AuthInfo{AuthURL: ks.AuthURL, Username: u.Name, Password: u.Password,
			UserDomainID: u.DomainID, ProjectName: projectName, ProjectDomainID: u.DomainID},
		RegionName: region, IdentityAPIVersion: "3",
	}
}

// appCredCloud is the clouds.yaml the driver writes into a cluster's Secret.
func appCredCloud(authURL, id, secret, region string) clouds.Cloud {
	return clouds.Cloud{
		AuthType:   "v3applicationcredential",
		AuthInfo:   &clouds.AuthInfo{AuthURL: authURL, ApplicationCredentialID: id, ApplicationCredentialSecret: secret},
		RegionName: region, Interface: "public", IdentityAPIVersion: "3",
	}
}

// connect authenticates with a clouds.yaml holding c.
func connect(t *testing.T, c clouds.Cloud, cfg openstack.Config) *openstack.Cloud {
	t.Helper()
	cfg.Cloud, cfg.CloudsFile = "test", writeClouds(t, c)
	cloud, err := openstack.Connect(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cloud
}

// tokenRoles are the sorted role names of the session's token.
func tokenRoles(t *testing.T, c *openstack.Cloud) []string {
	t.Helper()
	rs, err := c.Provider.GetAuthResult().(tokens.CreateResult).ExtractRoles()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range rs {
		names = append(names, r.Name)
	}
	sort.Strings(names)
	return names
}

// counter counts requests per host:port and method+path.
type counter struct {
	base http.RoundTripper
	mu   sync.Mutex
	host map[string]int
	path map[string]int
}

func newCounter() *counter {
	return &counter{base: http.DefaultTransport, host: map[string]int{}, path: map[string]int{}}
}

func (c *counter) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.host[r.URL.Host]++
	c.path[r.Method+" "+r.URL.Host+r.URL.Path]++
	c.mu.Unlock()
	return c.base.RoundTrip(r)
}

func (c *counter) hostCount(host string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.host[host]
}
