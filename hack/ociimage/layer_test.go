package main

import (
	"archive/tar"
	"bytes"
	"io"
	"io/fs"
	"testing"
	"time"
)

// TestTarEntries: the headers carry nothing of the machine (owner root, no names, the one
// time given), the sticky bit survives, directories are marked as such, parents come first.
func TestTarEntries(t *testing.T) {
	t.Parallel()
	mtime := time.Date(2026, 11, 28, 0, 22, 12, 500, time.FixedZone("CET", 3600))
	entries := withParents([]entry{
		{path: "/usr/local/bin/x", mode: 0o755, data: []byte("binary")},
		{path: "/tmp", mode: fs.ModeDir | fs.ModeSticky | 0o777},
	})
	b, err := tarEntries(entries, mtime)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := tarEntries(entries, mtime)
	if !bytes.Equal(b, again) {
		t.Error("two writes of the same entries differ")
	}
	want := []struct {
		name string
		mode int64
		typ  byte
	}{
		{"tmp/", 0o1777, tar.TypeDir},
		{"usr/", 0o755, tar.TypeDir},
		{"usr/local/", 0o755, tar.TypeDir},
		{"usr/local/bin/", 0o755, tar.TypeDir},
		{"usr/local/bin/x", 0o755, tar.TypeReg},
	}
	tr := tar.NewReader(bytes.NewReader(b))
	for i := 0; ; i++ {
		h, err := tr.Next()
		if err == io.EOF {
			if i != len(want) {
				t.Errorf("%d entries, want %d", i, len(want))
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if i >= len(want) {
			t.Fatalf("unexpected entry %s", h.Name)
		}
		w := want[i]
		if h.Name != w.name || h.Mode != w.mode || h.Typeflag != w.typ {
			t.Errorf("entry %d: %s %o %c, want %s %o %c", i, h.Name, h.Mode, h.Typeflag, w.name, w.mode, w.typ)
		}
		if h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" || !h.ModTime.Equal(mtime.Truncate(time.Second)) {
			t.Errorf("%s: owner %d:%d %q:%q, time %s", h.Name, h.Uid, h.Gid, h.Uname, h.Gname, h.ModTime)
		}
	}
}
