package gitea

import "strings"

// Dir is the repository's bare Git directory on this machine, for a test to read (git
// log, ls-tree) without a clone; writing it directly would bypass Gitea's hooks, which
// keep its database in step: push over HTTP instead.
func (r *Repo) Dir() string {
	// Gitea stores repositories as ROOT/owner/name.git, both lower-cased (app.ini's
	// [repository] ROOT).
	return r.s.path("work", "data", "repositories", strings.ToLower(r.Owner), strings.ToLower(r.Name)+".git")
}

// Server is the Gitea the repository is on, for calls its helpers do not wrap.
func (r *Repo) Server() *Server { return r.s }
