package generator

import (
	"bytes"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"

	corev1 "k8s.io/api/core/v1"
	kustypes "sigs.k8s.io/kustomize/api/types"
)

// File names inside a cluster directory.
const (
	HelmReleaseFile   = "helmrelease.yaml"
	KustomizationFile = "kustomization.yaml"
	NamespaceFile     = "namespace.yaml"
	// SecretFilePrefix starts the name of every Secret file, plaintext or encrypted.
	SecretFilePrefix = "secret-"
)

// SecretSuffix is the suffix (after the release name) of the Secret a file in a cluster's
// directory holds, from the file's base name (secret-<suffix>.yaml or .sops.yaml); ok is
// false for a file that holds no Secret.
func SecretSuffix(base string) (suffix string, ok bool) {
	rest, ok := strings.CutPrefix(base, SecretFilePrefix)
	if !ok {
		return "", false
	}
	return strings.TrimSuffix(strings.TrimSuffix(rest, ".yaml"), ".sops"), true
}

// FileSet is a change to the repository: files to write and paths to remove, all relative
// to the repository root.
type FileSet struct {
	Files   map[string][]byte
	Deletes []string
}

// Paths returns every path the set writes or removes, sorted.
func (fs *FileSet) Paths() []string {
	out := make([]string, 0, len(fs.Files)+len(fs.Deletes))
	for p := range fs.Files {
		out = append(out, p)
	}
	out = append(out, fs.Deletes...)
	sort.Strings(out)
	return out
}

// SecretEncoding is how a cluster's Secrets are written to the repository: the suffix of
// their files, after the base name (secret-<name>), and how a Secret becomes a file's
// content. SOPS (internal/sopsenc) keeps them safe in Git; PlaintextSecrets writes them in
// clear.
type SecretEncoding struct {
	Suffix string
	Encode func(s *corev1.Secret) ([]byte, error)
}

// PlaintextSecrets writes Secrets unencrypted. It exists for tests and for operators who
// deliver the repository by other means; never push its output to a shared Git server.
var PlaintextSecrets = &SecretEncoding{Suffix: ".yaml", Encode: func(s *corev1.Secret) ([]byte, error) { return MarshalObject(s) }}

// FileOptions controls how a Result is laid out as files.
type FileOptions struct {
	// Secrets is how Secrets are written; nil leaves them out of the change. Layout reads
	// only its Suffix.
	Secrets *SecretEncoding
	// Existing lists the base names of the files already in the cluster directory, so the
	// kustomization keeps listing Secret files this event does not carry material for.
	Existing []string
	// Suspend writes the cluster suspended (suspend.go): its HelmRelease with spec.suspend,
	// its Application without automated sync. The caller keeps the suspension; the
	// generator has no other way to know of it.
	Suspend bool
}

// File is one file of a Layout: its path and the object it holds, a manifest (Object)
// or a Secret (Secret). It is not serialised yet: MarshalObject writes a manifest, the
// caller's SecretEncoding a Secret, and a caller whose repository may hold the file
// already (the reconciler) serialises only what it does not.
type File struct {
	Path   string
	Object any
	Secret *corev1.Secret
}

// Layout is a Result as a repository change before serialisation: the files it writes,
// in the order Layout made them, and the paths it removes.
type Layout struct {
	Files   []File
	Deletes []string
}

// DeployFile is the base name of the file that deploys a cluster in its directory: the
// HelmRelease, or the Argo CD Application with --format argo.
func (cfg *Config) DeployFile() string {
	if cfg.Format == FormatArgo {
		return ApplicationFile
	}
	return HelmReleaseFile
}

// ClusterDir is the directory that holds one cluster: <root>/<namespace>/<R>, root being
// its management cluster's path (Result.Root).
func ClusterDir(root, namespace, release string) string {
	return path.Join(root, namespace, release)
}

// Files is Layout with every file serialised: manifests by MarshalObject, Secrets by
// opts.Secrets. It is the whole render, for what writes no repository (render, diff, the
// tests).
func (res *Result) Files(cfg *Config, opts FileOptions) (*FileSet, error) {
	l := res.Layout(cfg, opts)
	fs := &FileSet{Files: make(map[string][]byte, len(l.Files)), Deletes: l.Deletes}
	for _, f := range l.Files {
		var b []byte
		var err error
		if f.Secret != nil {
			b, err = opts.Secrets.Encode(f.Secret)
		} else {
			b, err = MarshalObject(f.Object)
		}
		if err != nil {
			return nil, f.Wrap(err)
		}
		fs.Files[f.Path] = b
	}
	return fs, nil
}

// Wrap names the file, or the Secret, an error of serialising it is about.
func (f File) Wrap(err error) error {
	if f.Secret != nil {
		return fmt.Errorf("secret %s/%s: %w", f.Secret.Namespace, f.Secret.Name, err)
	}
	return fmt.Errorf("%s: %w", f.Path, err)
}

// Layout lays the result out as a repository change:
//
//	<path>/sources/<kind>-<name>.yaml          shared chart source
//	<path>/flux/<kind>-<namespace>.yaml        per-namespace layout: its GitRepository, Kustomization
//	<path>/<namespace>/namespace.yaml
//	<path>/<namespace>/<R>/helmrelease.yaml
//	<path>/<namespace>/<R>/secret-<name>.yaml  (or .sops.yaml)
//	<path>/<namespace>/<R>/kustomization.yaml
//	<path>/<namespace>/<R>/chart/kustomization.yaml  Argo mode with chart patches (argo.go)
//
// A delete_cluster result removes helmrelease.yaml and keeps the Secrets, which must outlive
// the CAPI Cluster; with no Secret left, it removes the whole directory, unless the
// delete has reached DeleteSecretsRemoved (delete.go): that directory stays until the
// service finishes the delete.
func (res *Result) Layout(cfg *Config, opts FileOptions) *Layout {
	dir := ClusterDir(res.Root, res.Namespace, res.ReleaseName)
	l := &Layout{}
	add := func(p string, obj any) { l.Files = append(l.Files, File{Path: p, Object: obj}) }
	secretFiles := map[string]bool{}
	for _, name := range opts.Existing {
		if strings.HasPrefix(name, SecretFilePrefix) {
			secretFiles[name] = true
		}
	}
	deployFile := cfg.DeployFile()
	// The chart kustomization of an Application with patches (argo.go) lives below the
	// directory, where the kustomization.yaml-listed files do not: it goes when a later
	// render needs no patch, and with the rest of the directory (at the end of a delete:
	// until then the Application being deleted keeps a source to compare with). Without
	// argo.repo_url no Application ever had one.
	chartFile := path.Join(dir, ChartDir, KustomizationFile)
	dropChart := cfg.Format == FormatArgo && cfg.Argo.RepoURL != ""
	if res.Operation == v1alpha1.DeleteCluster {
		l.Deletes = append(l.Deletes, path.Join(dir, deployFile))
		if len(secretFiles) == 0 {
			if dropChart {
				l.Deletes = append(l.Deletes, chartFile)
			}
			if DeletePhaseOf(opts.Existing, deployFile) == DeleteSecretsRemoved {
				add(path.Join(dir, KustomizationFile), unfinishedDelete(res.ReleaseName))
				return l
			}
			l.Deletes = append(l.Deletes, path.Join(dir, KustomizationFile))
			return l
		}
		add(path.Join(dir, KustomizationFile), kustomization(secretFiles, ""))
		return l
	}

	o := res.Objects
	if o.Source != nil {
		add(path.Join(res.Root, SourcesDir, sourceFile(o.Source)), o.Source)
	}
	add(path.Join(res.Root, res.Namespace, NamespaceFile), o.Namespace)
	for _, lo := range o.Layout {
		add(layoutFile(res.Root, lo), lo)
	}
	var deploy any = o.HelmRelease
	switch {
	case o.Application != nil && opts.Suspend:
		deploy = suspendedApplication(o.Application).Object
	case o.Application != nil:
		deploy = o.Application.Object
	case opts.Suspend:
		deploy = suspendedHelmRelease(o.HelmRelease)
	}
	add(path.Join(dir, deployFile), deploy)
	switch {
	case o.Application != nil && chartSourcePath(o.Application) != "":
		add(chartFile, chartKustomization(res.Chart, res.ReleaseName, res.Namespace, res.Values))
	case dropChart:
		l.Deletes = append(l.Deletes, chartFile)
	}
	if opts.Secrets != nil {
		for _, s := range o.Secrets {
			base := SecretFilePrefix + strings.TrimPrefix(s.Name, res.ReleaseName+"-")
			name := base + opts.Secrets.Suffix
			// Another encoding of the same Secret (e.g. .yaml vs .sops.yaml) is replaced.
			for old := range secretFiles {
				if old != name && (old == base+".yaml" || old == base+".sops.yaml") {
					delete(secretFiles, old)
					l.Deletes = append(l.Deletes, path.Join(dir, old))
				}
			}
			secretFiles[name] = true
			l.Files = append(l.Files, File{Path: path.Join(dir, name), Secret: s})
		}
	}
	add(path.Join(dir, KustomizationFile), kustomization(secretFiles, deployFile))
	return l
}

func sourceFile(o Object) string {
	return strings.ToLower(o.GetObjectKind().GroupVersionKind().Kind) + "-" + o.GetName() + ".yaml"
}

// kustomization lists the Secrets before the HelmRelease (or Application): the CA Secrets
// must exist before CAPI reconciles the Cluster, or it generates its own CA.
func kustomization(secretFiles map[string]bool, deployFile string) *kustypes.Kustomization {
	k := &kustypes.Kustomization{TypeMeta: kustypes.TypeMeta{
		APIVersion: kustypes.KustomizationVersion, Kind: kustypes.KustomizationKind}}
	for name := range secretFiles {
		k.Resources = append(k.Resources, name)
	}
	slices.Sort(k.Resources)
	if deployFile != "" {
		k.Resources = append(k.Resources, deployFile)
	}
	return k
}

// Stream joins a FileSet's files into one multi-document YAML stream in path order, each
// document headed by a "# Source:" comment as helm template does.
func (fs *FileSet) Stream() []byte {
	var b bytes.Buffer
	paths := make([]string, 0, len(fs.Files))
	for p := range fs.Files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		fmt.Fprintf(&b, "---\n# Source: %s\n", p)
		b.Write(fs.Files[p])
	}
	for _, p := range fs.Deletes {
		fmt.Fprintf(&b, "---\n# Delete: %s\n", p)
	}
	return b.Bytes()
}
