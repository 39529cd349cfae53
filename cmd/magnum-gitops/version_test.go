package main

import (
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/internal/buildinfo"
)

// TestVersionCommand: `version` in each format, and --version, report this binary's
// buildinfo.Read(); a bad format or an argument is bad input (exit 2).
func TestVersionCommand(t *testing.T) {
	t.Parallel()
	want := buildinfo.Read()
	text, _, err := run(t, "", "version")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		args   []string
		decode func(out string) (buildinfo.Info, error) // nil: compare with `version`'s text
		bad    string                                   // the error names this; exit 2
	}{
		{name: "text names every field", args: []string{"version"}, decode: parseVersionText},
		{name: "json", args: []string{"version", "-o", "json"}, decode: func(out string) (i buildinfo.Info, err error) {
			dec := json.NewDecoder(strings.NewReader(out))
			dec.DisallowUnknownFields()
			err = dec.Decode(&i)
			return i, err
		}},
		{name: "yaml", args: []string{"version", "--output", "yaml"}, decode: func(out string) (i buildinfo.Info, err error) {
			err = yaml.UnmarshalStrict([]byte(out), &i)
			return i, err
		}},
		{name: "--version prints what version prints", args: []string{"--version"}},
		{name: "unknown format", args: []string{"version", "-o", "xml"}, bad: `--output: unknown format "xml"`},
		{name: "an argument", args: []string{"version", "extra"}, bad: "unknown command"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _, err := run(t, "", tc.args...)
			if tc.bad != "" {
				if err == nil || !strings.Contains(err.Error(), tc.bad) || exitCode(io.Discard, err) != 2 {
					t.Fatalf("error %v (exit %d), want one naming %q with exit 2", err, exitCode(io.Discard, err), tc.bad)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.decode == nil {
				if out != text {
					t.Fatalf("%s printed\n%s\nversion printed\n%s", strings.Join(tc.args, " "), out, text)
				}
				return
			}
			got, err := tc.decode(out)
			if err != nil {
				t.Fatalf("%v in\n%s", err, out)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-buildinfo.Read +printed):\n%s", diff)
			}
		})
	}
}

// parseVersionText reads the text form back, so the test checks it names every field.
func parseVersionText(out string) (buildinfo.Info, error) {
	var i buildinfo.Info
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		k, v, _ := strings.Cut(line, ":")
		v = strings.TrimSpace(v)
		switch k {
		case "magnum-gitops":
			i.Version = v
		case "commit":
			i.Commit, i.TreeState, _ = strings.Cut(v, " (")
			i.TreeState = strings.TrimSuffix(i.TreeState, ")")
			if i.Commit == "unknown" {
				i.Commit = ""
			}
		case "build date":
			if v != "unknown" {
				i.BuildDate = v
			}
		case "go":
			i.GoVersion = v
		case "platform":
			i.Platform = v
		case "event API":
			i.EventAPIVersions = strings.Split(v, ", ")
		}
	}
	return i, nil
}

// TestWriteVersionText: the text form of a stamped build, as an operator reads it.
func TestWriteVersionText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		info buildinfo.Info
		want string
	}{
		{name: "make build",
			info: buildinfo.Info{Version: "0.2.0", Commit: "1f0d7522cb339160ec0ee028c2a3d2df13238985", TreeState: "clean",
				BuildDate: "2026-11-28T09:12:48Z", GoVersion: "go1.26.8", Platform: "linux/arm64",
				EventAPIVersions: []string{"magnum-gitops.io/v1alpha1"}},
			want: `magnum-gitops: 0.2.0
commit:        1f0d7522cb339160ec0ee028c2a3d2df13238985 (clean)
build date:    2026-11-28T09:12:48Z
go:            go1.26.8
platform:      linux/arm64
event API:     magnum-gitops.io/v1alpha1
`},
		{name: "no commit recorded",
			info: buildinfo.Info{Version: "0.0.0-dev", GoVersion: "go1.26.8", Platform: "linux/amd64",
				EventAPIVersions: []string{"magnum-gitops.io/v1alpha1", "magnum-gitops.io/v1beta1"}},
			want: `magnum-gitops: 0.0.0-dev
commit:        unknown
build date:    unknown
go:            go1.26.8
platform:      linux/amd64
event API:     magnum-gitops.io/v1alpha1, magnum-gitops.io/v1beta1
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if err := writeVersion(&b, tc.info, "text"); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, b.String()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
