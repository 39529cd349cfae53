package keystone

import (
	"context"
	"fmt"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/endpoints"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/regions"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/services"
)

// interfaces are the three endpoint interfaces every service gets, as in a deployment.
var interfaces = []gophercloud.Availability{
	gophercloud.AvailabilityPublic, gophercloud.AvailabilityInternal, gophercloud.AvailabilityAdmin,
}

// NewRegion creates a region for the test, with this Keystone's identity endpoints in it,
// and deletes it when the test ends. Tests sharing one Keystone register their services in
// their own region, so clients (gophercloud.EndpointOpts.Region) find exactly their
// services in the shared catalog.
func (k *Keystone) NewRegion(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	idc, err := k.adminIdentity(ctx)
	if err != nil {
		t.Fatal(err)
	}
	id := uniqueName(t)
	if _, err := regions.Create(ctx, idc, regions.CreateOpts{ID: id, Description: t.Name()}).Extract(); err != nil {
		t.Fatalf("keystone: creating region %s: %v", id, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		defer cancel()
		if err := regions.Delete(ctx, idc, id).ExtractErr(); err != nil && !gophercloud.ResponseCodeIs(err, 404) {
			t.Errorf("keystone: deleting region %s: %v", id, err)
		}
	})
	k.RegisterService(t, id, "identity", "keystone", k.AuthURL)
	return id
}

// RegisterService adds a service of serviceType (the catalog type, e.g. "network",
// "block-storage", "container-infra") named name, with public, internal and admin
// endpoints at url in region, and removes it when the test ends. url may contain
// Keystone's substitutions, e.g. http://127.0.0.1:PORT/v3/$(project_id)s.
func (k *Keystone) RegisterService(t testing.TB, region, serviceType, name, url string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	idc, err := k.adminIdentity(ctx)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := services.Create(ctx, idc, services.CreateOpts{Type: serviceType, Name: name,
		Description: fmt.Sprintf("%s for %s", name, t.Name())}).Extract()
	if err != nil {
		t.Fatalf("keystone: creating service %s: %v\n%s", serviceType, err, k.Log())
	}
	// Deleting a service deletes its endpoints.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		defer cancel()
		if err := services.Delete(ctx, idc, svc.ID).ExtractErr(); err != nil && !gophercloud.ResponseCodeIs(err, 404) {
			t.Errorf("keystone: deleting service %s: %v", serviceType, err)
		}
	})
	for _, iface := range interfaces {
		if _, err := endpoints.Create(ctx, idc, endpoints.CreateOpts{Availability: iface, Region: region,
			URL: url, ServiceID: svc.ID}).Extract(); err != nil {
			t.Fatalf("keystone: creating the %s endpoint of %s: %v", iface, serviceType, err)
		}
	}
}
