package openstack_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/reconciler/openstack"
)

// TestCABundle: an event without a CA bundle gets the file of [drivers] openstack_ca_file,
// else the first system bundle found; one that carries a bundle keeps it; a file that does
// not read is bad input naming the option.
func TestCABundle(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	caFile, system := filepath.Join(dir, "cloud-ca.pem"), filepath.Join(dir, "system.pem")
	for f, content := range map[string]string{caFile: "cloud CA", system: "system roots"} {
		if err := os.WriteFile(f, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	missing := filepath.Join(dir, "missing.pem")
	tests := []struct {
		name    string
		c       openstack.CABundle
		carried string
		want    string
		wantErr string
	}{
		{name: "the configured file", c: openstack.CABundle{File: caFile, System: []string{system}}, want: "cloud CA"},
		{name: "the first system bundle found", c: openstack.CABundle{System: []string{missing, system}}, want: "system roots"},
		{name: "none found", c: openstack.CABundle{System: []string{missing}}},
		{name: "the event's own", c: openstack.CABundle{File: caFile}, carried: "the sender's", want: "the sender's"},
		{name: "a file that does not read", c: openstack.CABundle{File: missing}, wantErr: "magnum.drivers.openstack_ca_file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ev := &v1alpha1.ClusterEvent{Secrets: &v1alpha1.SecretMaterial{
				ApplicationCredential: &v1alpha1.ApplicationCredential{ID: "id", Secret: "s"},
				CABundle:              v1alpha1.Sensitive(tc.carried)}}
			err := tc.c.Resolve(context.Background(), ev)
			if tc.wantErr != "" {
				if !errors.Is(err, v1alpha1.ErrInvalidInput) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want bad input naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil || string(ev.Secrets.CABundle) != tc.want {
				t.Fatalf("CABundle = %q, %v; want %q", ev.Secrets.CABundle, err, tc.want)
			}
		})
	}
}
