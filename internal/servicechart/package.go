package servicechart

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"helm.sh/helm/v3/pkg/action"
)

// Package writes the chart's package (`helm package`: NAME-VERSION.tgz) into dest, with
// version as both the chart's version and its appVersion, and returns its path. Helm stamps
// each file of the archive with the time of packaging; Package stamps them with modTime
// instead (the commit's date), so the same commit gives the same bytes and a release's
// SHA256SUMS can be checked by building it again.
func Package(root, version string, modTime time.Time, dest string) (string, error) {
	tmp, err := os.MkdirTemp("", "magnum-gitops-chart-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	p := action.NewPackage()
	p.Version, p.AppVersion, p.Destination = version, version, tmp
	helmTgz, err := p.Run(filepath.Join(root, Dir), nil)
	if err != nil {
		return "", fmt.Errorf("helm package: %w", err)
	}
	in, err := os.ReadFile(helmTgz)
	if err != nil {
		return "", err
	}
	out, err := restamp(in, modTime)
	if err != nil {
		return "", fmt.Errorf("%s: %w", filepath.Base(helmTgz), err)
	}
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dest, filepath.Base(helmTgz))
	return path, os.WriteFile(path, out, 0o644)
}

// restamp copies a gzipped tar archive entry by entry, in the same order, with every
// entry's times set to modTime and the gzip header's time left out; the gzip header's
// extra field and comment (Helm's marks) are kept.
func restamp(tgz []byte, modTime time.Time) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	zw.Extra, zw.Comment = zr.Extra, zr.Comment
	tr, tw := tar.NewReader(zr), tar.NewWriter(zw)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		h.ModTime, h.AccessTime, h.ChangeTime = modTime.UTC().Truncate(time.Second), time.Time{}, time.Time{}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := io.Copy(tw, tr); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
