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
//   - A Batch is what a writer whose changes depend on the repository uses: it plans a
//     change on Batch.Tip through a Snapshot.Recording, which records what the plan reads,
//     and adds the change with that snapshot (Planned). The change is committed on the tip
//     only while its plan holds there: everything it read reads the same as when it was
//     planned. A change that no longer holds comes back with ErrStale and is planned
//     again by its writer on the new tip (a SOPS file that keeps its ciphertext while its
//     plaintext is unchanged is then recomputed against what the remote holds). So the
//     plans of a group can be made side by side on one head, and the chain is still one
//     push. The package never calls back into its writers.
//
// A push refused because the branch moved is retried with backoff on the new head, up to
// Options.MaxAttempts: the chain is committed again there, and the changes whose plans no
// longer hold come back from Batch.Push to be planned again. A path the remote changed
// since the batch began, to content other than what the change wants, stops that change
// with a *ConflictError instead of being overwritten; identical content is no conflict. A
// push the remote refuses for good (a hook, a protected ref) fails at once with a
// *PushRejectedError.
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
