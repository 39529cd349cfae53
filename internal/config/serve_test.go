package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
)

// TestMachineFailureDeadline: serve.machine_failure_deadline is the status judgement's
// deadline: unset keeps the default, 0s means never, a negative one is refused naming the
// key.
func TestMachineFailureDeadline(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		name, doc string
		want      time.Duration
		err       string
	}{
		{"unset: the default", "serve: {listen: ':8080'}\n", 15 * time.Minute, ""},
		{"0s: never", "serve: {machine_failure_deadline: 0s}\n", 0, ""},
		{"a duration", "serve: {machine_failure_deadline: 45m}\n", 45 * time.Minute, ""},
		{"negative", "serve: {machine_failure_deadline: -1m}\n", 0, "serve.machine_failure_deadline: must not be negative"},
		{"negative shutdown delay", "serve: {shutdown_delay: -1s}\n", 0, "serve.shutdown_delay: must not be negative"},
		{"not a duration", "serve: {machine_failure_deadline: soon}\n", 0, "serve.machine_failure_deadline"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := filepath.Join(dir, strings.NewReplacer(":", "", " ", "-").Replace(tc.name)+".yaml")
			if err := os.WriteFile(p, []byte(tc.doc), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := Load(p)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Load = %v, want an error naming %q", err, tc.err)
				}
				if !errors.Is(err, v1alpha1.ErrInvalidInput) {
					t.Errorf("%v is not bad input (exit status 2)", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Serve.MachineFailureDeadlineOr(15 * time.Minute); got != tc.want {
				t.Errorf("MachineFailureDeadlineOr = %v, want %v", got, tc.want)
			}
		})
	}
}
