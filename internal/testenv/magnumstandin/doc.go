// Package magnumstandin serves stand-ins for the OpenStack APIs that cannot run in tests:
// Magnum (Container Infrastructure Management API v1) and the services its drivers read,
// Neutron, Cinder and Nova. Each is built from the documented API reference
// (docs.openstack.org/api-ref), registered in a real Keystone's catalog
// (internal/testenv/keystone) and checks every token against that Keystone, so gophercloud
// discovers and authenticates to them exactly as in production.
//
// They are stand-ins, not OpenStack: only the calls magnum-gitops makes are served, and
// anything else (an unknown query parameter, a missing Accept header, a Magnum request
// without the microversion the client must speak) is refused loudly, so a client sending
// something unexpected fails its test instead of being silently ignored.
//
// The Magnum stand-in's state can be changed while it runs (Magnum.Update), so a test can
// script a sequence of Magnum states, as operators and the conductor would produce them.
package magnumstandin
