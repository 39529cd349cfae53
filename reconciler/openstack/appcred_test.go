package openstack_test

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/applicationcredentials"

	"github.com/magnum-gitops/magnum-gitops/internal/testenv/keystone"
	"github.com/magnum-gitops/magnum-gitops/reconciler/openstack"
)

const clusterUUID = "3e9b7c52-1d4a-4f8e-9b6c-2a7d5e8f1c03"

// appCredFixture is a project member (roles member and reader) with an identity client of
// its own: Keystone lets users create application credentials only for themselves.
type appCredFixture struct {
	ks    *keystone.Keystone
	user  keystone.User
	creds *openstack.AppCredentials
}

func newAppCredFixture(t *testing.T) appCredFixture {
	ks := keystone.Start(t)
	clearOSEnv(t)
	projectID, projectName := ks.CreateProject(t)
	user := ks.CreateUser(t, projectID, "member", "reader")
	idc, err := connect(t, passwordCloud(ks, user, projectName, ks.Region), openstack.Config{}).Identity()
	if err != nil {
		t.Fatal(err)
	}
	return appCredFixture{ks: ks, user: user, creds: &openstack.AppCredentials{Identity: idc}}
}

// authenticate logs in with the credential the way a cluster does (its clouds.yaml).
func (f appCredFixture) authenticate(t *testing.T, c *openstack.AppCredential) (*openstack.Cloud, error) {
	t.Helper()
	path := writeClouds(t, appCredCloud(f.ks.AuthURL, c.ID, c.Secret.Reveal(), f.ks.Region))
	return openstack.Connect(t.Context(), openstack.Config{Cloud: "test", CloudsFile: path})
}

func TestAppCredentialCreate(t *testing.T) {
	f := newAppCredFixture(t)
	expiry := time.Now().Add(2 * time.Hour).Truncate(time.Second)
	tests := []struct {
		name       string
		req        openstack.CredentialRequest
		wantRoles  []string
		wantDesc   string
		wantExpiry *time.Time
	}{
		{name: "driver default: every role of the requesting user",
			req:       openstack.CredentialRequest{ClusterUUID: clusterUUID, ClusterName: "prod-a"},
			wantRoles: []string{"member", "reader"}, wantDesc: "Magnum cluster (prod-a)"},
		{name: "restricted roles",
			req:       openstack.CredentialRequest{ClusterUUID: clusterUUID, ClusterName: "prod-a", Roles: []string{"reader"}},
			wantRoles: []string{"reader"}, wantDesc: "Magnum cluster (prod-a)"},
		{name: "with expiry, unnamed cluster described by uuid",
			req:       openstack.CredentialRequest{ClusterUUID: clusterUUID, ExpiresAt: &expiry},
			wantRoles: []string{"member", "reader"}, wantDesc: "Magnum cluster (" + clusterUUID + ")", wantExpiry: &expiry},
	}
	nameRE := regexp.MustCompile("^magnum-" + clusterUUID + "-[0-9a-f]{8}$")
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := f.creds.Create(t.Context(), tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if !nameRE.MatchString(c.Name) || c.UserID != f.user.ID || c.ProjectID != f.user.ProjectID {
				t.Fatalf("credential %s name %q user %s project %s", c.ID, c.Name, c.UserID, c.ProjectID)
			}
			if len(c.Secret.Reveal()) < 40 {
				t.Fatalf("secret of %d characters", len(c.Secret.Reveal()))
			}
			printed := fmt.Sprintf("%v %+v %#v %s", c, *c, c, c.Event())
			if strings.Contains(printed, c.Secret.Reveal()) {
				t.Fatal("formatting the credential prints its secret")
			}
			// What Keystone stored.
			stored, err := applicationcredentials.Get(t.Context(), f.creds.Identity, f.user.ID, c.ID).Extract()
			if err != nil {
				t.Fatal(err)
			}
			if stored.Description != tc.wantDesc || stored.Unrestricted {
				t.Errorf("description %q unrestricted %v, want %q and false", stored.Description, stored.Unrestricted, tc.wantDesc)
			}
			switch {
			case tc.wantExpiry == nil && c.ExpiresAt != nil:
				t.Errorf("expires at %v, want never", c.ExpiresAt)
			case tc.wantExpiry != nil && (c.ExpiresAt == nil || !c.ExpiresAt.Equal(*tc.wantExpiry)):
				t.Errorf("expires at %v, want %v", c.ExpiresAt, tc.wantExpiry)
			}
			// A cluster authenticates with id + secret and gets exactly these roles.
			cloud, err := f.authenticate(t, c)
			if err != nil {
				t.Fatalf("authenticating with the new credential: %v", err)
			}
			if got := tokenRoles(t, cloud); !slices.Equal(got, tc.wantRoles) {
				t.Errorf("token roles %v, want %v", got, tc.wantRoles)
			}
			if got, _ := cloud.ProjectID(); got != f.user.ProjectID {
				t.Errorf("token project %s, want %s", got, f.user.ProjectID)
			}
		})
	}
}

// TestAppCredentialDelete: a cluster holding two credentials (a retried create) loses only
// the one deleted, only its own, and a repeated delete succeeds.
func TestAppCredentialDelete(t *testing.T) {
	f := newAppCredFixture(t)
	req := openstack.CredentialRequest{ClusterUUID: clusterUUID, ClusterName: "prod-a"}
	old, err := f.creds.Create(t.Context(), req)
	if err != nil {
		t.Fatal(err, f.ks.Log())
	}
	next, err := f.creds.Create(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if next.ID == old.ID || next.Name == old.Name {
		t.Fatalf("a second create returned the first credential: %s %s", next.ID, next.Name)
	}
	for _, c := range []*openstack.AppCredential{old, next} {
		if _, err := f.authenticate(t, c); err != nil {
			t.Fatalf("credential %s: %v", c.ID, err)
		}
	}

	otherCluster := "0c7a4e2b-9d8f-4a1c-8e6b-5d4c3b2a1f0e"
	steps := []struct {
		name        string
		cluster, id string
		wantErr     error
	}{
		{"another cluster's credential is refused", otherCluster, next.ID, openstack.ErrNotManaged},
		{"delete the old credential", clusterUUID, old.ID, nil},
		{"delete it again: already gone is success", clusterUUID, old.ID, nil},
		{"empty id: nothing to delete", clusterUUID, "", nil},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			err := f.creds.Delete(t.Context(), f.user.ID, s.cluster, s.id)
			if !errors.Is(err, s.wantErr) {
				t.Fatalf("Delete: %v, want %v", err, s.wantErr)
			}
		})
	}

	// Keystone answers a deleted credential 404 (ApplicationCredentialNotFound), older
	// releases 401: either is a refusal.
	_, err = f.authenticate(t, old)
	if !gophercloud.ResponseCodeIs(err, 401) && !gophercloud.ResponseCodeIs(err, 404) {
		t.Fatalf("authenticating with the deleted credential: %v, want 401 or 404", err)
	}
	if strings.Contains(err.Error(), old.Secret.Reveal()) {
		t.Fatal("the refusal carries the secret")
	}
	if _, err := f.authenticate(t, next); err != nil {
		t.Fatalf("the new credential after deleting the old: %v", err)
	}
}

func TestAppCredentialWrongSecretRefused(t *testing.T) {
	f := newAppCredFixture(t)
	c, err := f.creds.Create(t.Context(), openstack.CredentialRequest{ClusterUUID: clusterUUID})
	if err != nil {
		t.Fatal(err)
	}
	wrong := *c
	wrong.Secret = "wrong-secret-1b9f04"
	_, err = f.authenticate(t, &wrong)
	if !gophercloud.ResponseCodeIs(err, 401) {
		t.Fatalf("wrong secret: %v, want 401", err)
	}
	if strings.Contains(err.Error(), "wrong-secret-1b9f04") {
		t.Fatal("the refusal carries the secret")
	}
}

func TestAppCredentialCreateRejectsBadUUID(t *testing.T) {
	// No Keystone call happens: the input is refused first.
	c := &openstack.AppCredentials{}
	_, err := c.Create(t.Context(), openstack.CredentialRequest{ClusterUUID: "prod-a"})
	if err == nil || !strings.Contains(err.Error(), "cluster.uuid") {
		t.Fatalf("error %v, want one naming cluster.uuid", err)
	}
}

// TestAppCredentialDeleteCluster: after a cluster's delete completes, every credential
// named for it goes, and no other.
func TestAppCredentialDeleteCluster(t *testing.T) {
	f := newAppCredFixture(t)
	req := openstack.CredentialRequest{ClusterUUID: clusterUUID, ClusterName: "prod-a"}
	a, err := f.creds.Create(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.creds.Create(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	other, err := f.creds.Create(t.Context(), openstack.CredentialRequest{ClusterUUID: "0c7a4e2b-9d8f-4a1c-8e6b-5d4c3b2a1f0e", ClusterName: "other"})
	if err != nil {
		t.Fatal(err)
	}
	n, err := f.creds.DeleteCluster(t.Context(), "", clusterUUID)
	if err != nil || n != 2 {
		t.Fatalf("DeleteCluster: %d deleted, %v; want 2", n, err)
	}
	for _, c := range []*openstack.AppCredential{a, b} {
		if _, err := f.authenticate(t, c); err == nil {
			t.Errorf("credential %s still works", c.ID)
		}
	}
	if _, err := f.authenticate(t, other); err != nil {
		t.Errorf("another cluster's credential was deleted: %v", err)
	}
}
