package main

import (
	"fmt"
	"os"

	"github.com/magnum-gitops/magnum-gitops/generator"
)

// systemCABundles are where Linux distributions keep the bundle the driver's default (the
// certifi bundle, i.e. Mozilla's roots) corresponds to.
var systemCABundles = []string{
	"/etc/ssl/certs/ca-certificates.crt", // Debian, Ubuntu
	"/etc/pki/tls/certs/ca-bundle.crt",   // Fedora, RHEL
	"/etc/ssl/ca-bundle.pem",             // openSUSE
	"/etc/ssl/cert.pem",                  // Alpine
}

// fillCABundle gives the cloud-credentials Secret a "cacert" the way the driver does when the
// event has none: [drivers] openstack_ca_file, else the system's root bundle.
func fillCABundle(ev *generator.ClusterEvent, cfg *generator.Config) error {
	s := ev.Secrets
	if s == nil || s.ApplicationCredential == nil || s.CABundle != "" {
		return nil
	}
	if f := cfg.Magnum.Drivers.OpenstackCAFile; f != "" {
		b, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("magnum.drivers.openstack_ca_file: %w", err)
		}
		s.CABundle = generator.Sensitive(b)
		return nil
	}
	for _, f := range systemCABundles {
		if b, err := os.ReadFile(f); err == nil {
			s.CABundle = generator.Sensitive(b)
			return nil
		}
	}
	return nil // Render names secrets.ca_bundle as missing.
}
