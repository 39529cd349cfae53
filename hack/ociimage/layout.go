package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// Annotations of the layout's index.json entry: the tag (skopeo's and podman's
// oci:DIR:TAG), and the full name containerd gives an imported image.
const (
	refNameAnnotation    = "org.opencontainers.image.ref.name"
	containerdAnnotation = "io.containerd.image.name"
)

// writeLayout writes idx as the only entry of an OCI image layout in dir, replacing a
// layout already there (and refusing any other directory that is not empty).
func writeLayout(dir string, idx v1.ImageIndex, name, version string) error {
	if err := clearLayout(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	return p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		refNameAnnotation:    version,
		containerdAnnotation: name + ":" + version,
	}))
}

// clearLayout removes dir when it is an OCI layout (a previous build), so that no blob of
// it lingers; a directory that is neither a layout nor empty is refused.
func clearLayout(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist) || err == nil && len(entries) == 0:
		return nil
	case err != nil:
		return fmt.Errorf("--output: %w", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "oci-layout")); err != nil {
		return invalid("--output: %s is not empty and holds no OCI layout: not replaced", dir)
	}
	return os.RemoveAll(dir)
}
