package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestRootFSIsTheImage: the tree --rootfs writes for the Dockerfile holds what the
// layout's image holds: the same paths, modes, contents and times, whatever the umask.
func TestRootFSIsTheImage(t *testing.T) {
	bins := testBinaries(t)
	layoutDir := filepath.Join(t.TempDir(), "oci")
	buildLayout(t, layoutArgs(t, layoutDir))
	idx := openIndex(t, layoutDir)
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	img, err := idx.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	want := imageFiles(t, img)

	// Not parallel: the umask is the process's.
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	dir := filepath.Join(t.TempDir(), "rootfs")
	buildLayout(t, []string{"--rootfs", dir, "--binary", bins[im.Manifests[0].Platform.String()], "--created", testCreated})
	got := map[string]imageFile{}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		f := imageFile{mode: info.Mode(), mtime: info.ModTime()}
		if !d.IsDir() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			f.data = string(b)
		}
		got[filepath.ToSlash(rel)] = f
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Errorf("the rootfs has %d entries, the image %d", len(got), len(want))
	}
	for name, w := range want {
		g, ok := got[name]
		switch {
		case !ok:
			t.Errorf("%s is in the image, not in the rootfs", name)
		case g.mode != w.mode || g.data != w.data || !g.mtime.Equal(w.mtime):
			t.Errorf("%s: rootfs %v %s (%d bytes), image %v %s (%d bytes)", name, g.mode, g.mtime, len(g.data), w.mode, w.mtime, len(w.data))
		}
	}
}
