package gate

import (
	"bufio"
	"crypto/sha256"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// settledFormat opens a file of settled directories. A file that opens otherwise (another
// version's) is not read: the next resync renders every cluster once, and saves anew.
const settledFormat = "magnum-gitops settled directories 1\n"

// settledEntry is a settled directory as a file keeps it.
type settledEntry struct {
	Key  [sha256.Size]byte
	Deps []PathHash
}

// Save writes the directories the gate knows to be settled to g.File (nothing when File
// or Build is empty), for Load in the next process: a service that starts again, with
// the same build and settings, then skips in its first resync every cluster that did not
// move meanwhile, as every later resync does. The keys hold Build and the settings, so a
// new build or configuration renders every cluster once. The file is replaced whole.
func (g *Gate) Save() error {
	if g == nil || g.File == "" || g.Build == "" {
		return nil
	}
	g.mu.Lock()
	entries := make([]settledEntry, 0, len(g.settled))
	for k, deps := range g.settled {
		entries = append(entries, settledEntry{Key: k, Deps: deps})
	}
	g.mu.Unlock()
	tmp, err := os.CreateTemp(filepath.Dir(g.File), filepath.Base(g.File)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename, there is none
	w := bufio.NewWriter(tmp)
	_, err = io.WriteString(w, settledFormat)
	if err == nil {
		err = gob.NewEncoder(w).Encode(entries)
	}
	if err == nil {
		err = w.Flush()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("saving the settled clusters: %w", err)
	}
	return os.Rename(tmp.Name(), g.File)
}

// Load adds the settled directories Save wrote to g.File. A missing file, or one of
// another format, loads nothing and is no error; a damaged one is an error, and loads
// nothing.
func (g *Gate) Load() error {
	if g == nil || g.File == "" || g.Build == "" {
		return nil
	}
	f, err := os.Open(g.File)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReader(f)
	head := make([]byte, len(settledFormat))
	if _, err := io.ReadFull(r, head); err != nil || string(head) != settledFormat {
		return nil
	}
	var entries []settledEntry
	if err := gob.NewDecoder(r).Decode(&entries); err != nil {
		return fmt.Errorf("%s: %w", g.File, err)
	}
	for _, e := range entries {
		g.Settle(e.Key, e.Deps)
	}
	return nil
}
