package main

import (
	"archive/tar"
	"bytes"
	"io"
	"io/fs"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// tarEntries is entries as a tar stream whose every byte follows from its input: owner
// root with no user or group names, one modification time (the commit's), USTAR headers
// (nothing the writing machine's clock, umask or users could change).
func tarEntries(entries []entry, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	mtime = mtime.UTC().Truncate(time.Second)
	for _, e := range entries {
		h := &tar.Header{
			Name:    strings.TrimPrefix(e.path, "/"),
			Mode:    tarMode(e.mode),
			ModTime: mtime,
			Format:  tar.FormatUSTAR,
		}
		if e.mode.IsDir() {
			h.Typeflag = tar.TypeDir
			h.Name += "/"
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// tarMode is a tar header's mode: the permission bits, and the sticky bit as tar spells it.
func tarMode(m fs.FileMode) int64 {
	mode := int64(m.Perm())
	if m&fs.ModeSticky != 0 {
		mode |= 0o1000
	}
	return mode
}

// layer is entries as an OCI layer, gzip-compressed (the library's level, the same on
// every machine for a given go.mod).
func layer(entries []entry, mtime time.Time) (v1.Layer, error) {
	b, err := tarEntries(entries, mtime)
	if err != nil {
		return nil, err
	}
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(b)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
}
