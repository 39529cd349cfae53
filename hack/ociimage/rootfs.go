package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// writeRootFS writes what the image's layers hold into dir, with their modes and the
// commit's modification time: the Dockerfile copies this tree onto scratch, so an image
// Docker builds holds the same files as the layout (owner root either way: COPY without
// --chown gives root).
func writeRootFS(dir string, o *options) error {
	ca, err := os.ReadFile(o.caCerts)
	if err != nil {
		return fmt.Errorf("--ca-certificates: %w (Debian: apt-get install ca-certificates)", err)
	}
	bin, err := os.ReadFile(o.binaries[0].path)
	if err != nil {
		return fmt.Errorf("--binary: %w", err)
	}
	base, err := baseEntries(ca)
	if err != nil {
		return err
	}
	mtime := o.created.Truncate(time.Second)
	entries := slices.Concat(base, binaryEntries(bin))
	for _, e := range entries {
		p := filepath.Join(dir, filepath.FromSlash(e.path))
		if e.mode.IsDir() {
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
		} else if err := os.WriteFile(p, e.data, e.mode.Perm()); err != nil {
			return err
		}
		// Chmod: the umask trims what MkdirAll and WriteFile create, and neither sets the
		// sticky bit.
		if err := os.Chmod(p, e.mode); err != nil {
			return err
		}
	}
	// Children first, so that writing a file does not move its directory's time again.
	for i := len(entries) - 1; i >= 0; i-- {
		if err := os.Chtimes(filepath.Join(dir, filepath.FromSlash(entries[i].path)), mtime, mtime); err != nil {
			return err
		}
	}
	return nil
}
