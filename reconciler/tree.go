package reconciler

import "github.com/magnum-gitops/magnum-gitops/gitrepo"

// A change is planned against a gitrepo.Tree, what the repository holds: a Git commit (a
// gitrepo.Snapshot, or the branch head through gitrepo.Repo), a directory (DirSink.Tree),
// or nothing (emptyTree, for which Pipeline.Plan takes a nil tree). The package has no
// Tree of its own: gitrepo's is the one its callers hold already, and one interface for
// "a repository's files" keeps every reader interchangeable.

// emptyTree is a repository with no files: planning against it yields every file.
type emptyTree struct{}

var _ gitrepo.Tree = emptyTree{}

// ReadFile implements gitrepo.Tree.
func (emptyTree) ReadFile(string) ([]byte, bool, error) { return nil, false, nil }

// ListDir implements gitrepo.Tree.
func (emptyTree) ListDir(string) ([]string, error) { return nil, nil }

// ListFiles implements gitrepo.Tree.
func (emptyTree) ListFiles(string) ([]string, error) { return nil, nil }
