// Command ociimage builds the magnum-gitops container image without a container daemon:
// from static binaries built by `make image`, Debian's CA certificates and a non-root
// user, on an empty base (nothing is downloaded), it writes an OCI image layout holding
// one index with a manifest per platform, and prints the index's digest. Every timestamp
// is the commit's, so the same commit gives the same digest.
//
// With --rootfs it writes the same files into a directory instead, which the Dockerfile
// copies onto scratch: one description of the image for both ways of building it.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run is the program: 0 on success, 2 on a bad flag, 1 on any other failure.
func run(args []string, stdout, stderr io.Writer) int {
	o, err := parseOptions(args, stderr)
	if err == nil {
		err = build(o, stdout)
	}
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	fmt.Fprintln(stderr, "ociimage:", err)
	if errors.Is(err, errInvalidInput) {
		return 2
	}
	return 1
}

// build writes the layout (and prints the index digest) or the rootfs.
func build(o *options, stdout io.Writer) error {
	if o.rootfs != "" {
		return writeRootFS(o.rootfs, o)
	}
	idx, err := buildIndex(o)
	if err != nil {
		return err
	}
	if err := writeLayout(o.output, idx, o.name, o.version); err != nil {
		return err
	}
	d, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, d)
	return nil
}
