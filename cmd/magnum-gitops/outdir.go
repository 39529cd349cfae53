package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/magnum-gitops/magnum-gitops/generator"
)

// existingFiles lists the base names of the regular files in dir (none if it is missing).
func existingFiles(dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if e.Type().IsRegular() {
			out = append(out, e.Name())
		}
	}
	return out
}

// writeFileSet applies a FileSet to a directory in two phases: every file is first written
// to a temporary file beside its target, and only when all of them are written are they
// renamed into place and the deletions done. A failure in the first phase leaves the
// directory as it was.
func writeFileSet(root string, fs *generator.FileSet) error {
	paths := make([]string, 0, len(fs.Files))
	for p := range fs.Files {
		if !filepath.IsLocal(p) {
			return fmt.Errorf("refusing to write %q outside %s", p, root)
		}
		paths = append(paths, p)
	}
	sort.Strings(paths)
	staged := map[string]string{}
	cleanup := func() {
		for _, tmp := range staged {
			os.Remove(tmp)
		}
	}
	for _, p := range paths {
		target := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			cleanup()
			return err
		}
		f, err := os.CreateTemp(filepath.Dir(target), ".tmp-"+filepath.Base(target)+"-*")
		if err != nil {
			cleanup()
			return err
		}
		staged[target] = f.Name()
		_, werr := f.Write(fs.Files[p])
		cerr := f.Close()
		if err := errors.Join(werr, cerr); err != nil {
			cleanup()
			return err
		}
		mode := os.FileMode(0o644)
		if strings.HasPrefix(filepath.Base(p), generator.SecretFilePrefix) {
			mode = 0o600
		}
		if err := os.Chmod(f.Name(), mode); err != nil {
			cleanup()
			return err
		}
	}
	for _, p := range paths {
		target := filepath.Join(root, p)
		if err := os.Rename(staged[target], target); err != nil {
			cleanup()
			return err
		}
		delete(staged, target)
	}
	for _, p := range fs.Deletes {
		target := filepath.Join(root, p)
		if err := os.Remove(target); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		// Prune directories the deletion emptied, like Git does.
		for dir := filepath.Dir(target); dir != root && strings.HasPrefix(dir, root); dir = filepath.Dir(dir) {
			if os.Remove(dir) != nil {
				break
			}
		}
	}
	return nil
}
