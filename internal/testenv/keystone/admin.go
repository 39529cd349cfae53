package keystone

import (
	"context"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/projects"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/roles"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/users"
)

// callTimeout bounds each administrative call the harness makes.
const callTimeout = 30 * time.Second

// AdminAuthOptions are the bootstrap admin's password credentials, scoped to its project.
func (k *Keystone) AdminAuthOptions() gophercloud.AuthOptions {
	return gophercloud.AuthOptions{
		IdentityEndpoint: k.AuthURL,
		Username:         k.AdminUser,
		Password:         k.AdminPassword,
		DomainID:         k.DomainID,
		AllowReauth:      true,
		Scope:            &gophercloud.AuthScope{ProjectName: k.AdminProject, DomainID: k.DomainID},
	}
}

// adminProvider returns the harness's own admin session, authenticating on first use.
func (k *Keystone) adminProvider(ctx context.Context) (*gophercloud.ProviderClient, error) {
	k.adminMu.Lock()
	defer k.adminMu.Unlock()
	if k.admin != nil {
		return k.admin, nil
	}
	pc, err := openstack.AuthenticatedClient(ctx, k.AdminAuthOptions())
	if err != nil {
		return nil, fmt.Errorf("keystone: admin authentication: %w", err)
	}
	k.admin = pc
	return pc, nil
}

// adminIdentity is an identity v3 client for the admin.
func (k *Keystone) adminIdentity(ctx context.Context) (*gophercloud.ServiceClient, error) {
	pc, err := k.adminProvider(ctx)
	if err != nil {
		return nil, err
	}
	return openstack.NewIdentityV3(pc, gophercloud.EndpointOpts{Region: k.Region})
}

// User is a Keystone user created for one test, with a password and roles on ProjectID.
type User struct {
	ID          string
	Name        string
	Password    string
	ProjectID   string
	ProjectName string
	DomainID    string
}

// AuthOptions are the user's password credentials scoped to its project.
func (u User) AuthOptions(authURL string) gophercloud.AuthOptions {
	return gophercloud.AuthOptions{
		IdentityEndpoint: authURL,
		UserID:           u.ID,
		Password:         u.Password,
		Scope:            &gophercloud.AuthScope{ProjectID: u.ProjectID},
	}
}

// CreateProject creates a project named after the test in the default domain and deletes
// it when the test ends. It returns the project's id and name.
func (k *Keystone) CreateProject(t testing.TB) (id, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	idc, err := k.adminIdentity(ctx)
	if err != nil {
		t.Fatal(err)
	}
	name = uniqueName(t)
	p, err := projects.Create(ctx, idc, projects.CreateOpts{Name: name, DomainID: k.DomainID}).Extract()
	if err != nil {
		t.Fatalf("keystone: creating project %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		defer cancel()
		if err := projects.Delete(ctx, idc, p.ID).ExtractErr(); err != nil && !gophercloud.ResponseCodeIs(err, 404) {
			t.Errorf("keystone: deleting project %s: %v", name, err)
		}
	})
	return p.ID, name
}

// CreateUser creates a user with the named roles (e.g. "member", "reader", "admin") on
// projectID and deletes it when the test ends.
func (k *Keystone) CreateUser(t testing.TB, projectID string, roleNames ...string) User {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	idc, err := k.adminIdentity(ctx)
	if err != nil {
		t.Fatal(err)
	}
	u := User{Name: uniqueName(t), Password: randomHex(16), ProjectID: projectID, DomainID: k.DomainID}
	created, err := users.Create(ctx, idc, users.CreateOpts{Name: u.Name, DomainID: k.DomainID,
		Password: u.Password, DefaultProjectID: projectID}).Extract()
	if err != nil {
		t.Fatalf("keystone: creating user %s: %v", u.Name, err)
	}
	u.ID = created.ID
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		defer cancel()
		if err := users.Delete(ctx, idc, u.ID).ExtractErr(); err != nil && !gophercloud.ResponseCodeIs(err, 404) {
			t.Errorf("keystone: deleting user %s: %v", u.Name, err)
		}
	})
	for _, rn := range roleNames {
		roleID, err := k.roleID(ctx, idc, rn)
		if err != nil {
			t.Fatal(err)
		}
		if err := roles.Assign(ctx, idc, roleID, roles.AssignOpts{UserID: u.ID, ProjectID: projectID}).ExtractErr(); err != nil {
			t.Fatalf("keystone: giving %s the role %s: %v", u.Name, rn, err)
		}
	}
	return u
}

// roleID finds a role by name; bootstrap creates admin, member and reader.
func (k *Keystone) roleID(ctx context.Context, idc *gophercloud.ServiceClient, name string) (string, error) {
	pages, err := roles.List(idc, roles.ListOpts{Name: name}).AllPages(ctx)
	if err != nil {
		return "", fmt.Errorf("keystone: listing role %s: %w", name, err)
	}
	rs, err := roles.ExtractRoles(pages)
	if err != nil {
		return "", err
	}
	if len(rs) != 1 {
		return "", fmt.Errorf("keystone: %d roles named %q", len(rs), name)
	}
	return rs[0].ID, nil
}

var unsafeChars = regexp.MustCompile(`[^a-zA-Z0-9-]+`)

// uniqueName is the test's name made safe, plus a random suffix: names stay readable in
// Keystone's log and never collide between tests sharing one Keystone.
func uniqueName(t testing.TB) string {
	n := unsafeChars.ReplaceAllString(t.Name(), "-")
	if len(n) > 40 {
		n = n[:40]
	}
	return n + "-" + randomHex(4)
}
