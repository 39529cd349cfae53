package gitrepo

import (
	"path"
	"strings"
)

// readSet records what a builder read from its Tree: the files it read (present or not)
// and the directories it listed. A change built on one commit is the change the builder
// would build on a later commit that differs from it only in paths the builder did not
// read, since a builder depends only on what it reads; ApplyGroup relies on that to build
// a group's changes side by side on the branch head and keep those that nothing before
// them in the chain invalidated.
type readSet struct {
	files, dirs []string
}

// file and dir record a read; callers hold the Repo's st, like every Snapshot read.
func (rs *readSet) file(p string) { rs.files = append(rs.files, cleanPath(p)) }
func (rs *readSet) dir(d string)  { rs.dirs = append(rs.dirs, cleanPath(d)) }

func cleanPath(p string) string { return path.Clean(strings.Trim(p, "/")) }

// writeSet is the paths a chain of commits changed since its base, and every directory
// above them.
type writeSet struct {
	files, dirs map[string]bool
}

func (ws *writeSet) add(paths []string) {
	if ws.files == nil {
		ws.files, ws.dirs = map[string]bool{}, map[string]bool{}
	}
	for _, p := range paths {
		p = cleanPath(p)
		ws.files[p] = true
		for d := path.Dir(p); d != "." && !ws.dirs[d]; d = path.Dir(d) {
			ws.dirs[d] = true
		}
	}
}

// touches reports whether a write may have changed what rs read: a file read that was
// written, or became or stopped being a directory (or lies under a path written as a
// file), and a directory listed with anything written under it.
func (ws *writeSet) touches(rs *readSet) bool {
	if len(ws.files) == 0 {
		return false
	}
	for _, f := range rs.files {
		if ws.files[f] || ws.dirs[f] || ws.fileAbove(f) {
			return true
		}
	}
	for _, d := range rs.dirs {
		if d == "." || ws.dirs[d] || ws.files[d] || ws.fileAbove(d) {
			return true
		}
	}
	return false
}

// fileAbove reports whether a directory above p was written as a file.
func (ws *writeSet) fileAbove(p string) bool {
	for d := path.Dir(p); d != "."; d = path.Dir(d) {
		if ws.files[d] {
			return true
		}
	}
	return false
}
