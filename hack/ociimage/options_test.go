package main

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// TestParseOptions: every bad flag is reported at once, by name, as bad input.
func TestParseOptions(t *testing.T) {
	t.Parallel()
	good := []string{"--output", "out", "--binary", "linux/amd64=a", "--version", "1.0.0", "--revision", "abc", "--created", testCreated}
	tests := []struct {
		name string
		args []string
		want []string // substrings of the error; none: no error
	}{
		{name: "layout", args: good},
		{name: "rootfs", args: []string{"--rootfs", "dir", "--binary", "bin", "--created", testCreated}},
		{name: "nothing", args: nil, want: []string{"--created", "--output: required"}},
		{name: "both outputs", args: append([]string{"--rootfs", "x"}, good...), want: []string{"--rootfs and --output"}},
		{name: "rootfs with a platform", args: []string{"--rootfs", "dir", "--binary", "linux/amd64=bin", "--created", testCreated},
			want: []string{"--binary: --rootfs takes one binary"}},
		{name: "binary without platform", args: []string{"--output", "o", "--binary", "bin", "--version", "1", "--revision", "r", "--created", testCreated},
			want: []string{`--binary "bin": want PLATFORM=PATH`}},
		{name: "not linux", args: []string{"--output", "o", "--binary", "windows/amd64=b", "--version", "1", "--revision", "r", "--created", testCreated},
			want: []string{"the platform must be linux"}},
		{name: "platform twice", args: append(good, "--binary", "linux/amd64=b"), want: []string{"platform linux/amd64 given twice"}},
		{name: "date not RFC 3339", args: append(good, "--created", "2026-11-28"), want: []string{`--created: "2026-11-28"`}},
		{name: "name with tag", args: append(good, "--name", "ghcr.io/x/y:1"), want: []string{"--name"}},
		{name: "no version nor revision", args: []string{"--output", "o", "--binary", "linux/arm64=b", "--created", testCreated},
			want: []string{"--version: required", "--revision: required"}},
		{name: "stray argument", args: append(good, "extra"), want: []string{"unexpected arguments"}},
		{name: "unknown flag", args: []string{"--platform", "linux/amd64"}, want: []string{"-platform"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := parseOptions(tt.args, io.Discard)
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, errInvalidInput) {
				t.Fatalf("error %v, want bad input", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
}
