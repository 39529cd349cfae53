package poller

import (
	"context"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/reconciler/openstack"
)

// ServiceCredentials is a Poller.Credentials creating each new cluster's application
// credential through a (openstack.AppCredentials) with the service's own identity.
// Keystone lets a user create credentials only for itself, on the project of its token, so
// the credential belongs to the service's user and project, not to the cluster's owner:
// Cluster API's OpenStack provider then creates the cluster's servers, networks and load
// balancers there. The driver, which acts with the requesting user's token, makes the
// owner's credential instead; only the event API (the driver shim) can do that.
func ServiceCredentials(a *openstack.AppCredentials) func(context.Context, openstack.Cluster) (*v1alpha1.ApplicationCredential, error) {
	return func(ctx context.Context, c openstack.Cluster) (*v1alpha1.ApplicationCredential, error) {
		cred, err := a.Create(ctx, openstack.CredentialRequest{ClusterUUID: c.UUID, ClusterName: c.Name})
		if err != nil {
			return nil, err
		}
		return cred.Event(), nil
	}
}
