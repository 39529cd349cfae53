package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPollerGrace: openstack.poller.create_grace reaches the Poller as its
// CreateGrace: unset keeps the poller's default (zero), 0s turns the grace off (negative),
// any other duration is taken as it is.
func TestPollerGrace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		name, doc string
		want      time.Duration
	}{
		{"unset: the poller's default", "openstack: {poller: {interval: 1m}}\n", 0},
		{"0s: no grace", "openstack: {poller: {create_grace: 0s}}\n", -1},
		{"a duration", "openstack: {poller: {create_grace: 2m30s}}\n", 150 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := filepath.Join(dir, strings.ReplaceAll(tc.name, ":", "")+".yaml")
			if err := os.WriteFile(p, []byte(tc.doc), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := Load(p)
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.OpenStack.Poller.Grace(); got != tc.want {
				t.Errorf("Grace() = %v, want %v", got, tc.want)
			}
		})
	}
}
