// Package gitrepo commits files to one branch of a remote Git repository and pushes them,
// safely under concurrent writers. It knows nothing of what the files mean.
//
// A Repo is a bare clone (in memory, or on disk in Options.CacheDir) of the branch. Changes
// are built with go-git plumbing: only the trees on the changed paths are written, no
// worktree is scanned, and a push sends exactly the new objects over one receive-pack
// session that moves the ref only from the head the change was built on — never a force
// push. The pack is written here, not by go-git's encoder, on a goroutine of its own while
// the chain of commits is built: the commits of a group rewrite the same trees, and each
// later version of a path goes as a delta against its first version in the pack, trees
// diffed entry by entry.
//
// Writing:
//   - Apply commits static Changes (desired content per path, a message, trailers).
//   - ApplyBuilder commits what a Builder computes from the Tree it will be committed on;
//     when the remote moved, the builder runs again on the new head, so content that
//     depends on the repository (such as a SOPS file that keeps its ciphertext when the
//     plaintext is unchanged) is recomputed there.
//   - ApplyGroup commits one change per builder as a chain and pushes the chain at once;
//     a builder that fails or conflicts is left out with its own error. The builders run
//     ahead of the chain, side by side on the branch head, recording what they read; a
//     change built there is kept when nothing committed before it wrote any of that, and
//     otherwise built again on the chain's tip.
//
// A push refused because the branch moved is retried with backoff on the new head, up to
// Options.MaxAttempts. A path the remote changed meanwhile, to content other than what the
// change wants, stops that change with a *ConflictError instead of being overwritten;
// identical content is no conflict. A push the remote refuses for good (a hook, a
// protected ref) fails at once with a *PushRejectedError.
//
// Review mode (Change.Review) pushes to a review branch created from Options.Branch and
// opens a pull request through a PullRequester (gitrepo/forge: Gitea, GitHub). A review
// branch is never Options.Branch, empty, or one of Options.ProtectedBranches.
//
// Reading: Snapshot (and Repo's ReadFile, ListDir, ListFiles) read the branch as last
// fetched or pushed; Walk goes through its first-parent history with parsed trailers.
//
// Hardening: paths are checked with ValidPath (Git's verify_path rules with NTFS and HFS+
// protection on), and signatures, messages and tree entry names with the rules of git fsck
// --strict, so nothing the package writes is an object Git would refuse. A damaged
// CacheDir (a crash while a ref was written, a lost object) is discarded and fetched again
// from the remote, reported through Options.Warn; the package logs nothing itself.
package gitrepo
