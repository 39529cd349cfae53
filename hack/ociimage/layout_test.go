package main

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestClearLayout: a previous layout is replaced whole; a directory holding anything else
// is left as it is and refused.
func TestClearLayout(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		files   []string // created under the directory; nil: no directory
		invalid bool
		kept    bool
	}{
		{name: "no directory"},
		{name: "empty", files: []string{}},
		{name: "a layout", files: []string{"oci-layout", "index.json", "blobs/sha256/stale"}},
		{name: "something else", files: []string{"notes.txt"}, invalid: true, kept: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "out")
			for _, f := range tt.files {
				p := filepath.Join(dir, f)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if tt.files != nil {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			err := clearLayout(dir)
			if got := errors.Is(err, errInvalidInput); got != tt.invalid || (err != nil && !tt.invalid) {
				t.Fatalf("clearLayout: %v, want bad input %v", err, tt.invalid)
			}
			for _, f := range tt.files {
				_, err := os.Stat(filepath.Join(dir, f))
				if (err == nil) != tt.kept {
					t.Errorf("%s: kept %v, want %v", f, err == nil, tt.kept)
				}
			}
		})
	}
}
