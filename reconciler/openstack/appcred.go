package openstack

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/applicationcredentials"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/magnum"
)

// ErrNotManaged is returned when asked to delete an application credential whose name
// does not mark it as the cluster's (the driver's "<id> is not managed by Magnum.").
var ErrNotManaged = errors.New("not managed by Magnum")

// AppCredentials creates and deletes the Keystone application credentials clusters
// authenticate with (CAPO and the cloud provider read them from the cloud-credentials
// Secret), as magnum-capi-helm 1.4.0 does.
type AppCredentials struct {
	// Identity is an identity v3 client. Keystone lets a user create application
	// credentials only for itself, so for Create and Rotate it must be authenticated as
	// the requesting user; for Delete, as the owner or an admin.
	Identity *gophercloud.ServiceClient
}

// CredentialRequest says whose credential to create, for which cluster.
type CredentialRequest struct {
	// UserID owns the credential; empty means the user of Identity's token.
	UserID string
	// ClusterUUID and ClusterName name and describe the credential.
	ClusterUUID string
	ClusterName string
	// Roles restricts the credential to these role names on the token's project. Empty
	// means every role of the requesting user's token, as the driver does.
	Roles []string
	// ExpiresAt, when set, makes Keystone refuse the credential after that time. The
	// driver sets none: a cluster outlives any fixed expiry unless rotated.
	ExpiresAt *time.Time
}

// AppCredential is a created application credential. Secret is shown by Keystone once,
// at creation; it prints as "<redacted>".
type AppCredential struct {
	ID        string
	Name      string
	UserID    string
	ProjectID string
	Roles     []string
	ExpiresAt *time.Time
	Secret    v1alpha1.Sensitive
}

// Event returns the credential as a ClusterEvent carries it.
func (c *AppCredential) Event() *v1alpha1.ApplicationCredential {
	return &v1alpha1.ApplicationCredential{ID: c.ID, Secret: c.Secret}
}

// CredentialName is the driver's name for a cluster's credential:
// "magnum-<cluster uuid>-<8 hex digits>". The suffix keeps names unique per user, which
// Keystone requires, so a rotation can create the new credential before deleting the old.
func CredentialName(clusterUUID, suffix string) string {
	return "magnum-" + clusterUUID + "-" + suffix
}

// CredentialDescription is the driver's description: "Magnum cluster (<name or uuid>)".
func CredentialDescription(clusterName, clusterUUID string) string {
	if clusterName == "" {
		clusterName = clusterUUID
	}
	return "Magnum cluster (" + clusterName + ")"
}

// Create creates a new application credential for the cluster.
func (a *AppCredentials) Create(ctx context.Context, req CredentialRequest) (*AppCredential, error) {
	if !magnum.IsUUIDLike(req.ClusterUUID) {
		return nil, &v1alpha1.FieldError{Field: "cluster.uuid", Message: fmt.Sprintf("%q is not a UUID", req.ClusterUUID)}
	}
	userID := req.UserID
	if userID == "" {
		var err error
		if userID, err = tokenUser(a.Identity); err != nil {
			return nil, err
		}
	}
	suffix, err := randomSuffix()
	if err != nil {
		return nil, err
	}
	opts := applicationcredentials.CreateOpts{
		Name:        CredentialName(req.ClusterUUID, suffix),
		Description: CredentialDescription(req.ClusterName, req.ClusterUUID),
	}
	for _, r := range req.Roles {
		opts.Roles = append(opts.Roles, applicationcredentials.Role{Name: r})
	}
	if req.ExpiresAt != nil {
		// Keystone takes a zoneless timestamp in UTC.
		utc := req.ExpiresAt.UTC()
		opts.ExpiresAt = &utc
	}
	ac, err := applicationcredentials.Create(ctx, a.Identity, userID, opts).Extract()
	if err != nil {
		return nil, fmt.Errorf("keystone: creating application credential %s for user %s: %w", opts.Name, userID, err)
	}
	out := &AppCredential{ID: ac.ID, Name: ac.Name, UserID: userID, ProjectID: ac.ProjectID,
		Secret: v1alpha1.Sensitive(ac.Secret)}
	for _, r := range ac.Roles {
		out.Roles = append(out.Roles, r.Name)
	}
	if !ac.ExpiresAt.IsZero() {
		t := ac.ExpiresAt
		out.ExpiresAt = &t
	}
	return out, nil
}

// Delete deletes the cluster's credential id, owned by userID. A credential that does not
// exist (any more) is success, so deleting twice is safe; one whose name does not start
// with "magnum-<cluster uuid>" is refused with ErrNotManaged.
func (a *AppCredentials) Delete(ctx context.Context, userID, clusterUUID, id string) error {
	if id == "" {
		return nil
	}
	ac, err := applicationcredentials.Get(ctx, a.Identity, userID, id).Extract()
	if gophercloud.ResponseCodeIs(err, 404) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("keystone: reading application credential %s of user %s: %w", id, userID, err)
	}
	if !strings.HasPrefix(ac.Name, "magnum-"+clusterUUID) {
		return fmt.Errorf("keystone: application credential %s (%q): %w", id, ac.Name, ErrNotManaged)
	}
	err = applicationcredentials.Delete(ctx, a.Identity, userID, id).ExtractErr()
	if err != nil && !gophercloud.ResponseCodeIs(err, 404) {
		return fmt.Errorf("keystone: deleting application credential %s of user %s: %w", id, userID, err)
	}
	return nil
}

// tokenUser is the user of the client's token.
func tokenUser(sc *gophercloud.ServiceClient) (string, error) {
	c := &Cloud{Provider: sc.ProviderClient}
	return c.UserID()
}

// randomSuffix is the driver's secrets.token_hex(4).
func randomSuffix() (string, error) {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// DeleteCluster deletes every application credential of userID (empty: the user of
// Identity's token) named for the cluster: what the delete of a cluster leaves behind once
// its Secrets are gone. It returns how many it deleted.
func (a *AppCredentials) DeleteCluster(ctx context.Context, userID, clusterUUID string) (int, error) {
	if userID == "" {
		var err error
		if userID, err = tokenUser(a.Identity); err != nil {
			return 0, err
		}
	}
	pages, err := applicationcredentials.List(a.Identity, userID, applicationcredentials.ListOpts{}).AllPages(ctx)
	if err != nil {
		return 0, fmt.Errorf("keystone: listing the application credentials of user %s: %w", userID, err)
	}
	all, err := applicationcredentials.ExtractApplicationCredentials(pages)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, ac := range all {
		if !strings.HasPrefix(ac.Name, "magnum-"+clusterUUID) {
			continue
		}
		if err := a.Delete(ctx, userID, clusterUUID, ac.ID); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
