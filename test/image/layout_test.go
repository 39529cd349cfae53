//go:build image

package image

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
)

// layoutDir is the OCI layout under test: MAGNUM_GITOPS_IMAGE, or where `make image`
// writes it.
func layoutDir() string {
	if d := os.Getenv("MAGNUM_GITOPS_IMAGE"); d != "" {
		return d
	}
	return filepath.Join(testenv.RepoRoot(), "bin", "image", "oci")
}

// hostImage is the layout's image for this machine's platform, found as a runtime's pull
// would: index.json's entry, its index, the manifest whose platform matches.
func hostImage(t *testing.T) v1.Image {
	t.Helper()
	dir := layoutDir()
	outer, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		unavailable(t, "no OCI layout at %s (make image): %v", dir, err)
	}
	m, err := outer.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 {
		t.Fatalf("%s/index.json names %d entries, want the image's index alone", dir, len(m.Manifests))
	}
	idx, err := outer.ImageIndex(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range im.Manifests {
		if d.Platform != nil && d.Platform.OS == "linux" && d.Platform.Architecture == runtime.GOARCH {
			img, err := idx.Image(d.Digest)
			if err != nil {
				t.Fatal(err)
			}
			return img
		}
	}
	t.Fatalf("the image has no linux/%s manifest", runtime.GOARCH)
	return nil
}

// unpack writes the image's filesystem (its layers applied in order) into dir, with each
// file's mode and owner: what a runtime's image store would hand the runtime.
func unpack(img v1.Image, dir string) error {
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Clean("/" + h.Name)
		if strings.Contains(h.Name, "..") {
			return fmt.Errorf("layer entry %q leaves the root", h.Name)
		}
		p := filepath.Join(dir, name)
		mode := h.FileInfo().Mode()
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := os.Symlink(h.Linkname, p); err != nil {
				return err
			}
			continue
		default:
			return fmt.Errorf("layer entry %q: type %c is not expected in this image", h.Name, h.Typeflag)
		}
		if err := os.Lchown(p, h.Uid, h.Gid); err != nil {
			return err
		}
		// After the owner: chown clears the set-id bits.
		if err := os.Chmod(p, mode); err != nil {
			return err
		}
	}
}
