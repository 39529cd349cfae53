package service

import (
	"slices"
	"strings"

	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/reconciler"
	"github.com/magnum-gitops/magnum-gitops/status"
)

// carries is the one rule for "has Flux applied this commit's change to the cluster?", the
// answer status takes as data (status.Ancestry) for events, delete steps and upgrade
// steps alike. The revision Flux applied ("<branch>@sha1:<commit>") carries commit when
// its tree holds what commit changed in the cluster's directory, by content: what a
// forge's merge commit, squash and rebase all keep, whatever commit id and message they
// give it.
//
//   - A commit that wrote the cluster's record (an event's) is carried when the applied
//     tree's record is the one it wrote: the record names the event (its id and body), and
//     serve's later steps (a delete's, which remove the Secrets and rewrite the directory's
//     kustomization.yaml) leave it alone.
//   - Any other commit (serve's own step) is carried when every file it changed is the same
//     in the applied tree.
//
// Outside review mode the history answers first, as cheaply as most calls need: Flux
// fetches the branch head, usually a later commit with commit in its history, or a
// published branch's head that publishes one (gitrepo.Split). In review mode it never
// answers: the commit serve pushed is on a review branch, which a squash or rebase never
// brings into main. The local clone answers; a revision it has not fetched yet carries
// nothing until a fetch brings it.
func (s *Service) carries(applied string, rec reconciler.ClusterRecord, commit string) bool {
	repo := s.o.Sink.Repo
	head := status.AppliedCommit(applied)
	if s.o.Sink.ReviewBranch == "" {
		branch, _, _ := strings.Cut(applied, "@")
		if ok, err := repo.ContainsIn(branch, head, commit); err == nil && ok {
			return true
		}
	}
	changed, err := repo.ChangedUnder(commit, generator.ClusterDir(rec.Root, rec.Namespace, rec.StackID))
	if err != nil || changed == nil {
		return false
	}
	if record := rec.RecordPath(); slices.Contains(changed, record) {
		changed = []string{record}
	}
	ok, err := repo.SameEntries(head, commit, changed...)
	return err == nil && ok
}
