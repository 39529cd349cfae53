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

// SecretEncoder turns a Secret into the file that holds it in Git: its base name (starting
// with SecretFilePrefix) and content. An encoder that encrypts with SOPS keeps Secrets safe
// in Git; PlaintextSecrets writes them in clear.
type SecretEncoder func(s *corev1.Secret, baseName string) (name string, content []byte, err error)

// PlaintextSecrets writes Secrets unencrypted. It exists for tests and for operators who
// deliver the repository by other means; never push its output to a shared Git server.
func PlaintextSecrets(s *corev1.Secret, baseName string) (string, []byte, error) {
	b, err := MarshalObject(s)
	return baseName + ".yaml", b, err
}

// FileOptions controls how a Result becomes files.
type FileOptions struct {
	// Secrets encodes Secrets; nil leaves them out of the change.
	Secrets SecretEncoder
	// Existing lists the base names of the files already in the cluster directory, so the
	// kustomization keeps listing Secret files this event does not carry material for.
	Existing []string
	// Marshal turns the object a file at path holds into the file's content; nil is
	// MarshalObject. The service's digest gate hands back what the repository already
	// holds for an object it serialised before, instead of serialising it again.
	Marshal func(path string, obj any) ([]byte, error)
	// Suspend writes the cluster suspended (suspend.go): its HelmRelease with spec.suspend,
	// its Application without automated sync. The caller keeps the suspension; the
	// generator has no other way to know of it.
	Suspend bool
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

// Files lays the result out as a repository change:
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
func (res *Result) Files(cfg *Config, opts FileOptions) (*FileSet, error) {
	dir := ClusterDir(res.Root, res.Namespace, res.ReleaseName)
	fs := &FileSet{Files: map[string][]byte{}}
	marshal := opts.Marshal
	if marshal == nil {
		marshal = func(_ string, obj any) ([]byte, error) { return MarshalObject(obj) }
	}
	add := func(p string, obj any) error {
		b, err := marshal(p, obj)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		fs.Files[p] = b
		return nil
	}
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
		fs.Deletes = append(fs.Deletes, path.Join(dir, deployFile))
		if len(secretFiles) == 0 {
			if dropChart {
				fs.Deletes = append(fs.Deletes, chartFile)
			}
			if DeletePhaseOf(opts.Existing, deployFile) == DeleteSecretsRemoved {
				return fs, add(path.Join(dir, KustomizationFile), unfinishedDelete(res.ReleaseName))
			}
			fs.Deletes = append(fs.Deletes, path.Join(dir, KustomizationFile))
			return fs, nil
		}
		return fs, add(path.Join(dir, KustomizationFile), kustomization(secretFiles, ""))
	}

	o := res.Objects
	if o.Source != nil {
		if err := add(path.Join(res.Root, SourcesDir, sourceFile(o.Source)), o.Source); err != nil {
			return nil, err
		}
	}
	if err := add(path.Join(res.Root, res.Namespace, NamespaceFile), o.Namespace); err != nil {
		return nil, err
	}
	for _, l := range o.Layout {
		if err := add(layoutFile(res.Root, l), l); err != nil {
			return nil, err
		}
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
	if err := add(path.Join(dir, deployFile), deploy); err != nil {
		return nil, err
	}
	switch {
	case o.Application != nil && chartSourcePath(o.Application) != "":
		if err := add(chartFile, chartKustomization(res.Chart, res.ReleaseName, res.Namespace, res.Values)); err != nil {
			return nil, err
		}
	case dropChart:
		fs.Deletes = append(fs.Deletes, chartFile)
	}
	if opts.Secrets != nil {
		for _, s := range o.Secrets {
			base := SecretFilePrefix + strings.TrimPrefix(s.Name, res.ReleaseName+"-")
			name, b, err := opts.Secrets(s, base)
			if err != nil {
				return nil, fmt.Errorf("secret %s/%s: %w", s.Namespace, s.Name, err)
			}
			// Another encoding of the same Secret (e.g. .yaml vs .sops.yaml) is replaced.
			for old := range secretFiles {
				if old != name && (old == base+".yaml" || old == base+".sops.yaml") {
					delete(secretFiles, old)
					fs.Deletes = append(fs.Deletes, path.Join(dir, old))
				}
			}
			secretFiles[name] = true
			fs.Files[path.Join(dir, name)] = b
		}
	}
	return fs, add(path.Join(dir, KustomizationFile), kustomization(secretFiles, deployFile))
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
