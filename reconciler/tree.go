package reconciler

// Tree reads the repository a change is planned against: a Git commit (a gitrepo.Snapshot),
// a directory (DirSink), or nothing (EmptyTree).
type Tree interface {
	// ReadFile returns a file's content; ok is false when there is no such file.
	ReadFile(path string) (data []byte, ok bool, err error)
	// ListDir returns the base names of the files directly in dir (none if it is missing).
	ListDir(dir string) ([]string, error)
}

// EmptyTree is a repository with no files: planning against it yields every file.
type EmptyTree struct{}

// ReadFile implements Tree.
func (EmptyTree) ReadFile(string) ([]byte, bool, error) { return nil, false, nil }

// ListDir implements Tree.
func (EmptyTree) ListDir(string) ([]string, error) { return nil, nil }
