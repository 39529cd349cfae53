package main

import (
	"archive/tar"
	"bytes"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// TestBuildIsReproducible: two builds of the same binaries at the same commit date, into
// two directories, are the same index and the same blobs, byte for byte; another date is
// another digest (the comparison can fail).
func TestBuildIsReproducible(t *testing.T) {
	t.Parallel()
	a, b, c := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b"), filepath.Join(t.TempDir(), "c")
	da := buildLayout(t, layoutArgs(t, a))
	db := buildLayout(t, layoutArgs(t, b))
	if da != db || !strings.HasPrefix(da, "sha256:") {
		t.Fatalf("two builds of one commit: %s and %s", da, db)
	}
	blobsA, blobsB := readBlobs(t, a), readBlobs(t, b)
	if !reflect.DeepEqual(blobsA, blobsB) {
		t.Errorf("the layouts hold different blobs: %d and %d", len(blobsA), len(blobsB))
	}
	// Both platforms' images share the base layer's blob: 2 manifests, 2 configs, 3
	// layers, the index.
	if len(blobsA) != 8 {
		t.Errorf("the layout holds %d blobs, want 8", len(blobsA))
	}
	if dc := buildLayout(t, layoutArgs(t, c, "--created", "2026-11-29T00:00:00Z")); dc == da {
		t.Errorf("another commit date gives the same digest %s", dc)
	}
}

// readBlobs is every blob of a layout by name.
func readBlobs(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	root := filepath.Join(dir, "blobs", "sha256")
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(root, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = b
	}
	return out
}

// TestImageConfig: each platform's image runs the binary as 65532 with the labels, every
// timestamp is the commit's, and its files are exactly those of spec.go: no shell, nothing
// else.
func TestImageConfig(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "oci")
	buildLayout(t, layoutArgs(t, dir))
	created, _ := time.Parse(time.RFC3339, testCreated)
	wantLabels := map[string]string{
		"org.opencontainers.image.title":    "magnum-gitops",
		"org.opencontainers.image.version":  "0.2.0",
		"org.opencontainers.image.revision": "0123456789abcdef0123456789abcdef01234567",
		"org.opencontainers.image.created":  testCreated,
		"org.opencontainers.image.source":   "https://github.com/magnum-gitops/magnum-gitops",
		"org.opencontainers.image.licenses": "Apache-2.0",
	}
	idx := openIndex(t, dir)
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(im.Annotations, wantLabels) {
		t.Errorf("index annotations %v, want %v", im.Annotations, wantLabels)
	}
	var platforms []string
	bins := testBinaries(t)
	for _, desc := range im.Manifests {
		platforms = append(platforms, desc.Platform.String())
		if desc.MediaType != types.OCIManifestSchema1 {
			t.Errorf("%s: manifest media type %s", desc.Platform, desc.MediaType)
		}
		img, err := idx.Image(desc.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		c := cfg.Config
		if cfg.OS != desc.Platform.OS || cfg.Architecture != desc.Platform.Architecture {
			t.Errorf("%s: the configuration says %s/%s", desc.Platform, cfg.OS, cfg.Architecture)
		}
		if c.User != "65532:65532" || !slices.Equal(c.Entrypoint, []string{"/usr/local/bin/magnum-gitops"}) ||
			!slices.Equal(c.Cmd, []string{"serve", "--config", "/etc/magnum-gitops/config.yaml"}) {
			t.Errorf("%s: user %q, entrypoint %q, cmd %q", desc.Platform, c.User, c.Entrypoint, c.Cmd)
		}
		if !reflect.DeepEqual(c.Labels, wantLabels) {
			t.Errorf("%s: labels %v, want %v", desc.Platform, c.Labels, wantLabels)
		}
		if !cfg.Created.Equal(created) {
			t.Errorf("%s: created %s, want the commit's %s", desc.Platform, cfg.Created.Time, created)
		}
		for _, h := range cfg.History {
			if !h.Created.Equal(created) {
				t.Errorf("%s: history %q created %s", desc.Platform, h.CreatedBy, h.Created.Time)
			}
		}
		bin, err := os.ReadFile(bins[desc.Platform.String()])
		if err != nil {
			t.Fatal(err)
		}
		files := imageFiles(t, img)
		ca, err := os.ReadFile("/etc/ssl/certs/ca-certificates.crt")
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]imageFile{
			"etc":                               {mode: fs.ModeDir | 0o755},
			"etc/group":                         {mode: 0o644, data: "root:x:0:\nnonroot:x:65532:\n"},
			"etc/passwd":                        {mode: 0o644, data: "root:x:0:0:root:/root:/usr/sbin/nologin\nnonroot:x:65532:65532:nonroot:/nonexistent:/usr/sbin/nologin\n"},
			"etc/ssl":                           {mode: fs.ModeDir | 0o755},
			"etc/ssl/certs":                     {mode: fs.ModeDir | 0o755},
			"etc/ssl/certs/ca-certificates.crt": {mode: 0o644, data: string(ca)},
			"tmp":                               {mode: fs.ModeDir | fs.ModeSticky | 0o777},
			"usr":                               {mode: fs.ModeDir | 0o755},
			"usr/local":                         {mode: fs.ModeDir | 0o755},
			"usr/local/bin":                     {mode: fs.ModeDir | 0o755},
			"usr/local/bin/magnum-gitops":       {mode: 0o755, data: string(bin)},
		}
		for name, f := range files {
			if w, ok := want[name]; !ok {
				t.Errorf("%s: unexpected %s in the image", desc.Platform, name)
			} else if f.mode != w.mode || f.data != w.data {
				t.Errorf("%s: %s is %v (%d bytes), want %v (%d bytes)", desc.Platform, name, f.mode, len(f.data), w.mode, len(w.data))
			}
			if !f.mtime.Equal(created) || f.uid != 0 || f.gid != 0 {
				t.Errorf("%s: %s modified %s, owner %d:%d; want the commit's date, root", desc.Platform, name, f.mtime, f.uid, f.gid)
			}
		}
		for name := range want {
			if _, ok := files[name]; !ok {
				t.Errorf("%s: %s is missing", desc.Platform, name)
			}
		}
	}
	if !slices.Equal(platforms, []string{"linux/amd64", "linux/arm64"}) {
		t.Errorf("platforms %v", platforms)
	}
}

// openIndex is the index a layout's index.json names.
func openIndex(t *testing.T, dir string) v1.ImageIndex {
	t.Helper()
	outer, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := outer.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 || m.Manifests[0].MediaType != types.OCIImageIndex {
		t.Fatalf("index.json: %+v, want one OCI index", m.Manifests)
	}
	idx, err := outer.ImageIndex(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

// imageFile is one file of an image's filesystem.
type imageFile struct {
	mode     fs.FileMode
	data     string
	mtime    time.Time
	uid, gid int
}

// imageFiles is the image's filesystem, its layers applied in order.
func imageFiles(t *testing.T, img v1.Image) map[string]imageFile {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	out := map[string]imageFile{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		var data bytes.Buffer
		if _, err := io.Copy(&data, tr); err != nil {
			t.Fatal(err)
		}
		out[strings.TrimSuffix(h.Name, "/")] = imageFile{mode: h.FileInfo().Mode(), data: data.String(), mtime: h.ModTime, uid: h.Uid, gid: h.Gid}
	}
}
