package generator

import (
	"path"
	"strings"

	kustypes "sigs.k8s.io/kustomize/api/types"
)

// A deleted cluster leaves Git in phases, each a state of its directory that anyone can
// read again (a restarted or newly elected service carries on from it):
//
//	DeleteNotStarted       the directory deploys the cluster: a HelmRelease (or
//	                       Application), and the Secrets beside it.
//	DeleteAwaitingCluster  the delete_cluster event removed the HelmRelease; the Secrets
//	                       stay, listed by kustomization.yaml.
//	DeleteSecretsRemoved   the Secret files left the directory (SecretsRemoved):
//	                       kustomization.yaml lists nothing and says so in
//	                       DeletePhaseAnnotation.
//	DeleteDone             the rest of the directory (the record) left Git.
//
// When a cluster goes from one phase to the next, and what happens outside Git meanwhile,
// is the delete step's, in one place: reconciler/delete.go.

// DeletePhase is where a cluster directory stands in a delete (see above).
type DeletePhase int

// The phases of a delete, in order.
const (
	DeleteNotStarted DeletePhase = iota
	DeleteAwaitingCluster
	DeleteSecretsRemoved
	DeleteDone
)

var deletePhaseNames = [...]string{"NotStarted", "AwaitingCluster", "SecretsRemoved", "Done"}

func (p DeletePhase) String() string { return deletePhaseNames[p] }

// DeletePhaseOf reads the phase of a cluster directory from the base names of its files:
// a deploy file (helmrelease.yaml or application.yaml, deployFile) means not started;
// Secret files alone, awaiting the Cluster; a kustomization.yaml without either, Secrets
// removed; nothing, done. A directory holding only its record (an interrupted last
// commit) is still SecretsRemoved's to finish.
func DeletePhaseOf(existing []string, deployFile string) DeletePhase {
	var deploy, secrets, files bool
	for _, name := range existing {
		files = true
		switch {
		case name == deployFile:
			deploy = true
		case strings.HasPrefix(name, SecretFilePrefix):
			secrets = true
		}
	}
	switch {
	case deploy:
		return DeleteNotStarted
	case secrets:
		return DeleteAwaitingCluster
	case files:
		return DeleteSecretsRemoved
	}
	return DeleteDone
}

// SecretsRemoved lays out the second phase of a delete, once the CAPI Cluster is gone:
// the Secret files leave the cluster's directory, whose kustomization.yaml then lists
// nothing, so that Flux drops the Secrets from its inventory. Their prune guard keeps
// them in the management cluster, where the service deletes them by name once Flux has
// applied this; it then removes the directory. Until then the directory (and the record
// beside it) says in Git that the delete is unfinished, so a restarted or newly elected
// service finishes it. existing lists the base names of the directory's files; removed
// are those of the Secret files; root is the cluster's Result.Root.
func SecretsRemoved(root, namespace, release string, existing []string) (fs *FileSet, removed []string, err error) {
	dir := ClusterDir(root, namespace, release)
	fs = &FileSet{Files: map[string][]byte{}}
	for _, name := range existing {
		if strings.HasPrefix(name, SecretFilePrefix) {
			removed = append(removed, name)
			fs.Deletes = append(fs.Deletes, path.Join(dir, name))
		}
	}
	b, err := MarshalObject(unfinishedDelete(release))
	if err != nil {
		return nil, nil, err
	}
	fs.Files[path.Join(dir, KustomizationFile)] = b
	return fs, removed, nil
}

// DeletePhaseAnnotation marks the kustomization.yaml of a directory in the second phase of
// a delete (see SecretsRemoved), with the value "secrets-removed".
const DeletePhaseAnnotation = "magnum-gitops.io/delete-phase"

// unfinishedDelete is the kustomization.yaml of a directory in the second phase of a
// delete: it lists nothing. kustomize refuses a Kustomization that has no field at all
// ("kustomization.yaml is empty", and with it the whole Flux Kustomization), so its
// metadata says what the directory is waiting for: the Secrets left Git, and magnum-gitops
// deletes them from the management cluster, then the directory.
func unfinishedDelete(release string) *kustypes.Kustomization {
	k := kustomization(nil, "")
	k.MetaData = &kustypes.ObjectMeta{Name: release, Annotations: map[string]string{
		DeletePhaseAnnotation: "secrets-removed"}}
	return k
}
