package gitrepo

import (
	"path"
	"strings"
)

// readSet records what a plan read from its Snapshot: the files it read (present or not)
// and the directories it listed or walked. Repo.holds compares them between the commit
// the plan was made on and the one its change would go on.
type readSet struct {
	files, dirs []string
}

// file and dir record a read; callers hold the Repo's st, like every Snapshot read.
func (rs *readSet) file(p string) { rs.files = append(rs.files, cleanPath(p)) }
func (rs *readSet) dir(d string)  { rs.dirs = append(rs.dirs, cleanPath(d)) }

func cleanPath(p string) string { return path.Clean(strings.Trim(p, "/")) }
