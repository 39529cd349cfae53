package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// errInvalidInput marks a bad flag: the message names it, and the exit status is 2.
var errInvalidInput = errors.New("invalid input")

// invalid wraps err as bad input.
func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errInvalidInput, fmt.Sprintf(format, args...))
}

// platformBinary is one --binary PLATFORM=PATH.
type platformBinary struct {
	platform v1.Platform
	path     string
}

// options are the program's flags, checked.
type options struct {
	// binaries: for an OCI layout, one per platform; for --rootfs, one path alone.
	binaries []platformBinary
	caCerts  string
	output   string // the OCI layout's directory
	rootfs   string // instead of a layout, the image's files in this directory (the Dockerfile's)
	name     string // the image's name without tag, e.g. ghcr.io/magnum-gitops/magnum-gitops
	version  string
	revision string
	source   string
	created  time.Time
}

// binaryFlag collects --binary values in the order given.
type binaryFlag []string

func (b *binaryFlag) String() string     { return strings.Join(*b, ",") }
func (b *binaryFlag) Set(v string) error { *b = append(*b, v); return nil }

// parseOptions reads the flags and reports every problem at once, each naming its flag.
func parseOptions(args []string, stderr io.Writer) (*options, error) {
	fs := flag.NewFlagSet("ociimage", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, `Usage: ociimage --output DIR --binary linux/amd64=PATH [--binary linux/arm64=PATH ...] --ca-certificates FILE --version V --revision SHA --created RFC3339
       ociimage --rootfs DIR --binary PATH --ca-certificates FILE --created RFC3339

Writes the magnum-gitops image as an OCI image layout (one index, a manifest per platform)
and prints the index digest; with --rootfs, writes the image's files into a directory
instead (the Dockerfile copies it onto scratch).`)
		fs.PrintDefaults()
	}
	var bins binaryFlag
	var created string
	o := &options{}
	fs.Var(&bins, "binary", "PLATFORM=PATH: a static binary for a platform (repeat per platform); with --rootfs, PATH alone")
	fs.StringVar(&o.caCerts, "ca-certificates", "/etc/ssl/certs/ca-certificates.crt", "the CA certificates bundle (Debian's ca-certificates package)")
	fs.StringVar(&o.output, "output", "", "the OCI image layout's directory (replaced if it holds one)")
	fs.StringVar(&o.rootfs, "rootfs", "", "write the image's files into this directory instead of a layout")
	fs.StringVar(&o.name, "name", "ghcr.io/magnum-gitops/magnum-gitops", "the image's name, without tag")
	fs.StringVar(&o.version, "version", "", "the release's version (the VERSION file)")
	fs.StringVar(&o.revision, "revision", "", "the commit the binaries are built from")
	fs.StringVar(&o.source, "source", defaultSource, "the source repository's URL")
	fs.StringVar(&created, "created", "", "the commit's date (RFC 3339): every timestamp of the image")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, invalid("%v", err)
	}
	var problems []string
	if fs.NArg() > 0 {
		problems = append(problems, fmt.Sprintf("unexpected arguments %q", fs.Args()))
	}
	t, err := time.Parse(time.RFC3339, created)
	if err != nil {
		problems = append(problems, fmt.Sprintf("--created: %q is not an RFC 3339 date (git log -1 --format=%%cI)", created))
	}
	o.created = t.UTC()
	if o.caCerts == "" {
		problems = append(problems, "--ca-certificates: required")
	}
	switch {
	case o.rootfs != "" && o.output != "":
		problems = append(problems, "--rootfs and --output: give one")
	case o.rootfs != "":
		if len(bins) != 1 || strings.Contains(bins[0], "=") {
			problems = append(problems, "--binary: --rootfs takes one binary, as a path alone")
		} else {
			o.binaries = []platformBinary{{path: bins[0]}}
		}
	case o.output == "":
		problems = append(problems, "--output: required (or --rootfs)")
	default:
		problems = append(problems, o.layoutProblems(bins)...)
	}
	if len(problems) > 0 {
		return nil, invalid("%s", strings.Join(problems, "; "))
	}
	return o, nil
}

// layoutProblems checks what an OCI layout needs and fills o.binaries.
func (o *options) layoutProblems(bins []string) []string {
	var problems []string
	if len(bins) == 0 {
		problems = append(problems, "--binary: at least one PLATFORM=PATH")
	}
	seen := map[string]bool{}
	for _, b := range bins {
		plat, file, ok := strings.Cut(b, "=")
		if !ok || file == "" {
			problems = append(problems, fmt.Sprintf("--binary %q: want PLATFORM=PATH, e.g. linux/arm64=bin/image/linux-arm64/magnum-gitops", b))
			continue
		}
		p, err := v1.ParsePlatform(plat)
		if err != nil || p.OS != "linux" || p.Architecture == "" {
			problems = append(problems, fmt.Sprintf("--binary %q: the platform must be linux/ARCH[/VARIANT]", b))
			continue
		}
		if seen[p.String()] {
			problems = append(problems, fmt.Sprintf("--binary %q: platform %s given twice", b, p))
			continue
		}
		seen[p.String()] = true
		o.binaries = append(o.binaries, platformBinary{platform: *p, path: file})
	}
	if o.version == "" {
		problems = append(problems, "--version: required")
	}
	if o.revision == "" {
		problems = append(problems, "--revision: required")
	}
	if o.name == "" || strings.Contains(o.name, "@") || strings.Contains(o.name[strings.LastIndex(o.name, "/")+1:], ":") {
		problems = append(problems, fmt.Sprintf("--name %q: an image name without tag or digest", o.name))
	}
	return problems
}
