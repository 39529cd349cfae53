package openstack_test

import (
	"encoding/pem"
	"io"
	"log"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/config/clouds"

	"github.com/magnum-gitops/magnum-gitops/internal/testenv/keystone"
	"github.com/magnum-gitops/magnum-gitops/reconciler/openstack"
)

func TestConnect(t *testing.T) {
	ks := keystone.Start(t)
	projectID, projectName := ks.CreateProject(t)
	user := ks.CreateUser(t, projectID, "member")

	// A TLS front for Keystone, to check the CA file and the insecure flag for real.
	target, _ := url.Parse(strings.TrimSuffix(ks.AuthURL, "/v3"))
	tlsFront := httptest.NewUnstartedServer(httputil.NewSingleHostReverseProxy(target))
	tlsFront.Config.ErrorLog = log.New(io.Discard, "", 0) // the untrusted case's handshake error
	tlsFront.StartTLS()
	t.Cleanup(tlsFront.Close)
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tlsFront.Certificate().Raw}), 0o600)
	httpsAuthURL := tlsFront.URL + "/v3"

	yes := true
	withAuthURL := func(c clouds.Cloud, u string) clouds.Cloud {
		a := *c.AuthInfo
		a.AuthURL = u
		c.AuthInfo = &a
		return c
	}
	good := passwordCloud(ks, user, projectName, "")
	tests := []struct {
		name    string
		clouds  *clouds.Cloud     // written to clouds.yaml as cloud "test"
		env     map[string]string // OS_* variables
		cfg     openstack.Config
		wantErr string // substring; empty means success
	}{
		{name: "clouds.yaml password, project by name", clouds: &good},
		{name: "clouds.yaml with region and internal interface",
			clouds: &good, cfg: openstack.Config{Region: ks.Region, Interface: "internal"}},
		{name: "OS_* variables", env: map[string]string{
			"OS_AUTH_URL": ks.AuthURL, "OS_USERNAME": user.Name, "OS_PASSWORD": user.Password,
			"OS_USER_DOMAIN_ID": "default", "OS_PROJECT_ID": projectID, "OS_REGION_NAME": ks.Region}},
		{name: "OS_CLOUD picks the clouds.yaml entry", clouds: &good, env: map[string]string{"OS_CLOUD": "test"}},
		{name: "CA file trusts the TLS endpoint",
			clouds: ptr(withAuthURL(good, httpsAuthURL)), cfg: openstack.Config{CAFile: caFile}},
		{name: "OS_CACERT trusts the TLS endpoint",
			clouds: ptr(withAuthURL(good, httpsAuthURL)), env: map[string]string{"OS_CACERT": caFile}},
		{name: "insecure skips verification",
			clouds: ptr(withAuthURL(good, httpsAuthURL)), cfg: openstack.Config{Insecure: &yes}},
		{name: "untrusted TLS endpoint", clouds: ptr(withAuthURL(good, httpsAuthURL)),
			wantErr: "certificate"},
		{name: "wrong password", clouds: ptr(passwordCloud(ks, keystone.User{Name: user.Name,
			Password: "not-the-password-7c1e", DomainID: "default"}, projectName, "")), wantErr: "401"},
		{name: "bad interface", clouds: &good, cfg: openstack.Config{Interface: "private"},
			wantErr: `interface "private"`},
		{name: "no credentials at all", wantErr: "no credentials"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clearOSEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			cfg := tc.cfg
			if tc.clouds != nil {
				if tc.env["OS_CLOUD"] != "" {
					t.Setenv("OS_CLIENT_CONFIG_FILE", writeClouds(t, *tc.clouds))
				} else {
					cfg.Cloud, cfg.CloudsFile = "test", writeClouds(t, *tc.clouds)
				}
			}
			cloud, err := openstack.Connect(t.Context(), cfg)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "not-the-password-7c1e") || strings.Contains(err.Error(), user.Password) {
					t.Fatalf("the error carries a password: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := cloud.UserID(); got != user.ID {
				t.Errorf("token user %s, want %s", got, user.ID)
			}
			if got, _ := cloud.ProjectID(); got != projectID {
				t.Errorf("token project %s, want %s", got, projectID)
			}
			u, region, err := cloud.IdentityEndpoint()
			if err != nil || u != ks.AuthURL || region != ks.Region {
				t.Errorf("identity endpoint %q in %q (%v), want %q in %q", u, region, err, ks.AuthURL, ks.Region)
			}
			if _, err := cloud.Identity(); err != nil {
				t.Errorf("identity client: %v", err)
			}
		})
	}
}

func TestConnectUnknownRegionHasNoEndpoints(t *testing.T) {
	ks := keystone.Start(t)
	projectID, projectName := ks.CreateProject(t)
	user := ks.CreateUser(t, projectID, "member")
	clearOSEnv(t)
	cloud := connect(t, passwordCloud(ks, user, projectName, "Atlantis"), openstack.Config{})
	if _, err := cloud.Image(); err == nil || !strings.Contains(err.Error(), `region "Atlantis"`) {
		t.Fatalf("image client in an unknown region: %v", err)
	}
	if _, _, err := cloud.IdentityEndpoint(); err == nil {
		t.Fatal("identity endpoint found in an unknown region")
	}
}

func ptr[T any](v T) *T { return &v }
