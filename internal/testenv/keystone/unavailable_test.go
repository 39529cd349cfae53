package keystone

import (
	"errors"
	"fmt"
	"testing"
)

// recorder is a testing.TB that records Skip and Fatal instead of ending the test.
type recorder struct {
	testing.TB
	skipped, failed bool
}

func (r *recorder) Helper()                   {}
func (r *recorder) Skip(args ...any)          { r.skipped = true }
func (r *recorder) Fatal(args ...any)         { r.failed = true }
func (r *recorder) Fatalf(string, ...any)     { r.failed = true }
func (r *recorder) Skipf(string, ...any)      { r.skipped = true }
func (r *recorder) Errorf(f string, a ...any) { r.TB.Errorf(f, a...) }

func TestMissingKeystoneSkipsOrFailsUnderCI(t *testing.T) {
	candidates := manageCandidates
	t.Cleanup(func() { manageCandidates = candidates })
	manageCandidates = []string{"/nonexistent/keystone-manage"}
	t.Setenv("PATH", t.TempDir())
	_, err := start(t.Context())
	if !errors.Is(err, ErrNotInstalled) {
		t.Fatalf("start without keystone-manage: %v, want ErrNotInstalled", err)
	}

	tests := []struct {
		ci          string
		err         error
		wantSkipped bool
		wantFailed  bool
	}{
		{ci: "", err: ErrNotInstalled, wantSkipped: true},
		{ci: "true", err: ErrNotInstalled, wantFailed: true},
		{ci: "", err: fmt.Errorf("keystone-manage db_sync: exit status 1"), wantFailed: true},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("CI=%q %v", tc.ci, tc.err), func(t *testing.T) {
			t.Setenv("CI", tc.ci)
			r := &recorder{TB: t}
			unavailable(r, tc.err)
			if r.skipped != tc.wantSkipped || r.failed != tc.wantFailed {
				t.Fatalf("skipped %v failed %v, want %v %v", r.skipped, r.failed, tc.wantSkipped, tc.wantFailed)
			}
		})
	}
}
