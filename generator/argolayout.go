package generator

import (
	"path"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/magnum-gitops/magnum-gitops/magnum"
)

// ArgoSOPSPlugin is the config management plugin the namespaces' parent Applications
// decrypt through: the one deploy/argocd/sops-plugin.yaml ships.
const ArgoSOPSPlugin = "sops"

// argoNamespaceParent is the per-namespace layouts' object in Argo mode: an Application
// that syncs one project namespace's directory (its Namespace, the Secrets and every
// cluster's Application) through the sops plugin, written under <path>/flux, which the
// root Application (deploy/argocd/per-namespace, or branch-per-namespace) syncs as a plain
// directory. One parent over the whole tree decrypts every cluster on every commit, in one
// manifest generation that stops fitting the repo-server's timeout at a few hundred
// clusters (docs/figures-argocd.md); a namespace's parent decrypts that namespace. In the
// branch-per-namespace layout it follows the namespace's published branch, which holds
// that directory alone: the repo-server then fetches, and streams to the plugin, one
// namespace instead of the repository.
func argoNamespaceParent(cfg *Config, root, namespace string) Object {
	a := cfg.Argo
	dir := path.Join(root, namespace)
	revision := a.TargetRevision
	if cfg.Flux.Layout == LayoutBranchPerNamespace {
		revision = PublishedBranch(dir)
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": argoApplicationGroup,
		"kind":       "Application",
		"metadata": map[string]any{
			"name":      magnum.FluxObjectName(namespace),
			"namespace": a.Namespace,
			"labels":    map[string]any{magnum.LabelManagedBy: magnum.ManagedBy},
		},
		"spec": map[string]any{
			"project": a.Project,
			"source": map[string]any{
				"repoURL":        a.RepoURL,
				"targetRevision": revision,
				"path":           dir,
				"plugin":         map[string]any{"name": ArgoSOPSPlugin},
			},
			"destination": map[string]any{"server": a.DestinationServer, "namespace": namespace},
			"syncPolicy": map[string]any{
				"automated":   argoAutomated(),
				"syncOptions": []any{"ServerSideApply=true"},
			},
		},
	}}
}
