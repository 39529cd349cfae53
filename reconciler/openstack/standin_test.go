package openstack_test

// Stand-ins for the OpenStack APIs that cannot run here (Neutron, Cinder, Nova, Magnum) come
// from internal/testenv/magnumstandin: built from the documented API reference, registered
// in the real Keystone's catalog, and checking every token against that Keystone. These
// names keep the tests short.

import (
	"testing"

	"github.com/magnum-gitops/magnum-gitops/internal/testenv/keystone"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv/magnumstandin"
)

type (
	standIn = magnumstandin.Server
	network = magnumstandin.Network
	subnet  = magnumstandin.Subnet
	flavor  = magnumstandin.Flavor
)

func newNeutron(t *testing.T, ks *keystone.Keystone, nets []network, subs []subnet) *standIn {
	return magnumstandin.StartNeutron(t, ks, nets, subs)
}

func newCinder(t *testing.T, ks *keystone.Keystone, types []string) *standIn {
	return magnumstandin.StartCinder(t, ks, types)
}

func newNova(t *testing.T, ks *keystone.Keystone, flavors []flavor) *standIn {
	return magnumstandin.StartNova(t, ks, flavors)
}
