package openstack

import (
	"context"
	"fmt"
	"os"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
)

// systemCABundles are where Linux distributions keep the root bundle that the driver's
// default (the certifi bundle, i.e. Mozilla's roots) corresponds to.
var systemCABundles = []string{
	"/etc/ssl/certs/ca-certificates.crt", // Debian, Ubuntu
	"/etc/pki/tls/certs/ca-bundle.crt",   // Fedora, RHEL
	"/etc/ssl/ca-bundle.pem",             // openSUSE
	"/etc/ssl/cert.pem",                  // Alpine
}

// CABundle gives the cloud-credentials Secret a "cacert" the way the driver does when the
// event has none: the file of [drivers] openstack_ca_file, else the system's root bundle.
// Without either, rendering names secrets.ca_bundle as missing.
type CABundle struct {
	// File is [drivers] openstack_ca_file.
	File string
	// System lists the system bundles to try; systemCABundles when nil.
	System []string
}

// Resolve implements reconciler.Resolver.
func (c CABundle) Resolve(_ context.Context, ev *v1alpha1.ClusterEvent) error {
	s := ev.Secrets
	if s == nil || s.ApplicationCredential == nil || s.CABundle != "" {
		return nil
	}
	if c.File != "" {
		b, err := os.ReadFile(c.File)
		if err != nil {
			return &v1alpha1.FieldError{Field: "magnum.drivers.openstack_ca_file", Message: fmt.Sprint(err)}
		}
		s.CABundle = v1alpha1.Sensitive(b)
		return nil
	}
	system := c.System
	if system == nil {
		system = systemCABundles
	}
	for _, f := range system {
		if b, err := os.ReadFile(f); err == nil {
			s.CABundle = v1alpha1.Sensitive(b)
			return nil
		}
	}
	return nil
}
