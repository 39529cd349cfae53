package generator

import (
	"net/url"
	"path"
	"strings"

	"github.com/magnum-gitops/magnum-gitops/magnum"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Layouts: how Flux applies the tree under flux.path.
const (
	// LayoutSingle is one Kustomization over flux.path (deploy/flux). Every commit makes
	// kustomize-controller build, decrypt and dry-run apply every cluster; fine for
	// hundreds of clusters.
	LayoutSingle = "single"
	// LayoutPerNamespace gives each project namespace its own GitRepository, sparse-checked
	// out to the namespace's directory, and its own Kustomization, written by the generator
	// under <path>/flux/. The root Kustomization (deploy/flux/per-namespace) applies only
	// <path>/flux and <path>/sources. A commit is then applied where serve requests a
	// reconcile (the namespaces it touched) in the time one namespace takes; the others
	// pick the revision up at flux.interval.
	LayoutPerNamespace = "per-namespace"
	// LayoutBranchPerNamespace is the per-namespace layout with each namespace's directory
	// published on a branch of its own (PublishedBranch), which its GitRepository follows,
	// and <path>/flux and <path>/sources on one more, which the root GitRepository follows
	// (deploy/flux/branch-per-namespace). The whole tree, its history and its reviews stay
	// on the main branch; serve pushes the branches of what a commit changed with it, in the
	// same push. A GitRepository then fetches its namespace only, and only when it changed:
	// in the per-namespace layout each fetches the whole repository whenever main moves.
	LayoutBranchPerNamespace = "branch-per-namespace"
)

// FluxDir is the directory, under flux.path, of the per-namespace Flux objects; SourcesDir
// that of the shared chart sources.
const (
	FluxDir    = "flux"
	SourcesDir = "sources"
)

// PerNamespace reports whether each project namespace has its own GitRepository and
// Kustomization (LayoutPerNamespace, LayoutBranchPerNamespace).
func (f *FluxConfig) PerNamespace() bool {
	return f.Layout == LayoutPerNamespace || f.Layout == LayoutBranchPerNamespace
}

// LayoutNamespace is the namespace of the objects that apply each project namespace in
// the per-namespace layouts, named magnum.FluxObjectName(namespace): Flux's
// source_namespace, or in Argo mode Argo CD's namespace (the parent Applications); "" in
// the single layout. Status reads "applied?" there, and serve's reconcile requests go
// there.
func (c *Config) LayoutNamespace() string {
	switch {
	case !c.Flux.PerNamespace():
		return ""
	case c.Format == FormatArgo:
		return c.Argo.Namespace
	}
	return c.Flux.SourceNamespace
}

// PublishedBranch is the branch that publishes a directory of the main branch in the
// branch-per-namespace layout: magnum-gitops/<dir>, dir being <path>/<namespace>, or
// <path>/flux for the Flux objects and chart sources.
func PublishedBranch(dir string) string { return magnum.PublishedBranchPrefix + dir }

// PublishedPart is the directory whose branch publishes a path of the main branch in the
// branch-per-namespace layout ("" for none): the namespace's directory for what is in
// one, <root>/flux for the Flux objects and the chart sources. See gitrepo.Split.
func (c *Config) PublishedPart(p string) string {
	for _, root := range c.Roots() {
		rest, ok := strings.CutPrefix(p, root+"/")
		if !ok {
			continue
		}
		first, _, nested := strings.Cut(rest, "/")
		switch {
		case !nested:
			return ""
		case first == FluxDir || first == SourcesDir:
			return path.Join(root, FluxDir)
		}
		return path.Join(root, first)
	}
	return ""
}

// PublishedDirs are the directories a published part holds: a namespace's directory, or
// <root>/flux with <root>/sources.
func (c *Config) PublishedDirs(part string) []string {
	if root, base := path.Split(part); base == FluxDir {
		return []string{part, path.Join(root, SourcesDir)}
	}
	return []string{part}
}

// Defaults of the per-namespace objects.
const (
	defaultGitBranch        = "main"
	defaultDecryptionSecret = "sops-age"
)

// FluxGitConfig is the Git repository the per-namespace GitRepositories fetch: the one
// magnum-gitops pushes to, as Flux reaches it.
type FluxGitConfig struct {
	// URL is the repository's URL as source-controller fetches it.
	URL string `json:"url,omitempty"`
	// Branch is the branch Flux follows ("main").
	Branch string `json:"branch,omitempty"`
	// SecretRef names the Secret, in flux.source_namespace, with the credentials.
	SecretRef string `json:"secret_ref,omitempty"`
}

// layoutObjects returns the GitRepository and Kustomization that apply one project
// namespace in the per-namespace layouts, its parent Application in Argo mode
// (argoNamespaceParent), or nil in the single layout.
func layoutObjects(cfg *Config, root, namespace string) []Object {
	f := cfg.Flux
	if !f.PerNamespace() {
		return nil
	}
	if cfg.Format == FormatArgo {
		return []Object{argoNamespaceParent(cfg, root, namespace)}
	}
	name := magnum.FluxObjectName(namespace)
	dir := "./" + path.Join(root, namespace)
	labels := map[string]string{magnum.LabelManagedBy: magnum.ManagedBy}
	repo := &sourcev1.GitRepository{
		TypeMeta:   metav1.TypeMeta{APIVersion: sourcev1.GroupVersion.String(), Kind: sourcev1.GitRepositoryKind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.SourceNamespace, Labels: labels},
		Spec: sourcev1.GitRepositorySpec{
			URL:       f.Git.URL,
			Reference: &sourcev1.GitRepositoryRef{Branch: f.Git.Branch},
			Interval:  metav1.Duration{Duration: f.Interval.Duration},
			// Only the namespace's directory: the artifact kustomize-controller downloads,
			// unpacks and builds holds this project's clusters, not every cluster.
			SparseCheckout: []string{dir},
		},
	}
	if f.Layout == LayoutBranchPerNamespace {
		// The namespace's branch holds that directory alone: nothing to leave out.
		repo.Spec.Reference.Branch = PublishedBranch(path.Join(root, namespace))
		repo.Spec.SparseCheckout = nil
	}
	if f.Git.SecretRef != "" {
		repo.Spec.SecretRef = &meta.LocalObjectReference{Name: f.Git.SecretRef}
	}
	ks := &kustomizev1.Kustomization{
		TypeMeta:   metav1.TypeMeta{APIVersion: kustomizev1.GroupVersion.String(), Kind: kustomizev1.KustomizationKind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.SourceNamespace, Labels: labels},
		Spec: kustomizev1.KustomizationSpec{
			Interval:      metav1.Duration{Duration: f.Interval.Duration},
			RetryInterval: &metav1.Duration{Duration: f.RetryInterval.Duration},
			SourceRef:     kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: name},
			Path:          dir,
			// As deploy/flux: pruning uninstalls deleted HelmReleases; the Secrets carry the
			// prune guard; readiness comes from CAPI, not from waiting here.
			Prune:   true,
			Wait:    false,
			Timeout: &metav1.Duration{Duration: f.Timeout.Duration},
			Decryption: &kustomizev1.Decryption{Provider: "sops",
				SecretRef: &meta.LocalObjectReference{Name: f.DecryptionSecret}},
		},
	}
	return []Object{repo, ks}
}

// layoutFile is where a per-namespace object lives: <path>/flux/<kind>-<name>.yaml.
func layoutFile(root string, o Object) string {
	return path.Join(root, FluxDir, sourceFile(o))
}

// validateLayout checks the flux.layout options.
func (f *FluxConfig) validateLayout(p *problems, format string) {
	switch f.Layout {
	case LayoutSingle:
		return
	case LayoutPerNamespace, LayoutBranchPerNamespace:
	default:
		p.add("flux.layout", "must be %s, %s or %s, got %q", LayoutSingle, LayoutPerNamespace, LayoutBranchPerNamespace, f.Layout)
		return
	}
	if path.Clean(f.Path) != f.Path {
		p.add("flux.path", "must be a clean path with the %s layout, got %q", f.Layout, f.Path)
	}
	if format == FormatArgo {
		// The namespaces' parent Applications fetch argo.repo_url (validateRepo).
		return
	}
	// The URL lands in Git in clear: never quote it (it may carry a token), refuse a password.
	u, err := url.Parse(f.Git.URL)
	switch {
	case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http" && u.Scheme != "ssh"):
		p.add("flux.git.url", "must be the repository as source-controller fetches it (an https://, http:// or ssh:// URL)")
	case URLCarriesCredentials(u):
		p.add("flux.git.url", "must not carry a user, password, token or query: name the Secret that holds the credentials in flux.git.secret_ref")
	}
	if f.Git.Branch == "" || strings.ContainsAny(f.Git.Branch, " ~^:?*[\\") {
		p.add("flux.git.branch", "must be a branch name, got %q", f.Git.Branch)
	}
	if f.Git.SecretRef != "" && magnum.SanitizedName(f.Git.SecretRef) != f.Git.SecretRef {
		p.add("flux.git.secret_ref", "must be a Secret name, got %q", f.Git.SecretRef)
	}
	if f.DecryptionSecret == "" || magnum.SanitizedName(f.DecryptionSecret) != f.DecryptionSecret {
		p.add("flux.decryption_secret", "must be a Secret name, got %q", f.DecryptionSecret)
	}
}

// URLCarriesCredentials reports whether a URL holds what may be a secret: a password, a
// user name over http(s) (https://TOKEN@host is how GitHub and GitLab tokens are often
// written), or a query (?access_token=…). Such a URL would reach Git in clear, and logs
// and errors. ssh://git@host keeps its user: it names the account, and the key is a file.
func URLCarriesCredentials(u *url.URL) bool {
	if _, ok := u.User.Password(); ok || u.RawQuery != "" {
		return true
	}
	return u.User != nil && u.Scheme != "ssh"
}
