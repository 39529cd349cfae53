// Package chartrender renders a packaged Helm chart offline with the Helm Go SDK, the way
// helm-controller renders it, and parses the result into objects. Tests use it to check
// generated values against the real openstack-cluster chart; migrate uses it to see which
// objects a change of values would change before a cluster is adopted.
package chartrender

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/releaseutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// SharedChartsDir is where the released openstack-cluster packages live relative to the
// repository root: ../shared/charts beside the checkout.
const SharedChartsDir = "../shared/charts"

// ErrNoCharts reports that the shared chart packages are not present (a user's clone has
// no ../shared); tests skip on it.
var ErrNoCharts = errors.New("chartrender: ../shared/charts not found")

// FindChart returns the path of openstack-cluster-<version>.tgz, searching upwards from
// the working directory for shared/charts so it works from any package's tests.
func FindChart(version string) (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	name := "openstack-cluster-" + version + ".tgz"
	for {
		for _, cand := range []string{filepath.Join(dir, "..", "shared", "charts", name), filepath.Join(dir, "shared", "charts", name)} {
			if _, err := os.Stat(cand); err == nil {
				return cand, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("%w (looking for %s)", ErrNoCharts, name)
		}
		dir = parent
	}
}

// Load loads a chart package.
func Load(path string) (*chart.Chart, error) { return loader.Load(path) }

var (
	loadedMu sync.Mutex
	loaded   = map[string]*chart.Chart{}
)

// LoadVersion finds and loads openstack-cluster-<version>.tgz once per process.
func LoadVersion(version string) (*chart.Chart, error) {
	loadedMu.Lock()
	defer loadedMu.Unlock()
	if ch, ok := loaded[version]; ok {
		return ch, nil
	}
	p, err := FindChart(version)
	if err != nil {
		return nil, err
	}
	ch, err := Load(p)
	if err != nil {
		return nil, err
	}
	loaded[version] = ch
	return ch, nil
}

// Render renders the chart with the given values (Manifest) and parses the objects.
func Render(ch *chart.Chart, release, namespace string, values map[string]any) ([]*unstructured.Unstructured, error) {
	m, err := Manifest(ch, release, namespace, values)
	if err != nil {
		return nil, err
	}
	return Parse(strings.NewReader(m))
}

// rendering makes renders take turns: Helm's install sets a chart's dependencies as it
// renders it, and LoadVersion shares a loaded chart. Only tests render concurrently;
// migrate renders one cluster at a time.
var rendering sync.Mutex

// Manifest renders the chart with the given values as a client-only dry-run install does
// (action.Install with ClientOnly, what helm template runs): the release name checked, the
// dependencies' conditions and imported values applied, the values checked against the
// chart's schema with Helm's default capabilities, the templates rendered without a
// cluster, NOTES.txt and hooks left out, and the manifests in Helm's install order, each
// under its "# Source:" line. It uses Helm's rendering packages rather than pkg/action,
// whose Kubernetes client, registry and storage drivers the product never calls;
// TestManifestIsHelmTemplates compares the two. Values are round-tripped through JSON
// first, as helm-controller receives them, so numbers are float64 as the templates expect.
// It may be called concurrently, also for one chart.
func Manifest(ch *chart.Chart, release, namespace string, values map[string]any) (string, error) {
	raw, err := json.Marshal(values)
	if err != nil {
		return "", err
	}
	vals, err := chartutil.ReadValues(raw)
	if err != nil {
		return "", err
	}
	if err := chartutil.ValidateReleaseName(release); err != nil {
		return "", fmt.Errorf("release name %q: %w", release, err)
	}
	rendering.Lock()
	defer rendering.Unlock()
	if err := chartutil.ProcessDependenciesWithMerge(ch, vals); err != nil {
		return "", err
	}
	caps := chartutil.DefaultCapabilities.Copy()
	if kv := ch.Metadata.KubeVersion; kv != "" && !chartutil.IsCompatibleRange(kv, caps.KubeVersion.String()) {
		return "", fmt.Errorf("chart requires kubeVersion: %s which is incompatible with Kubernetes %s", kv, caps.KubeVersion.String())
	}
	opts := chartutil.ReleaseOptions{Name: release, Namespace: namespace, Revision: 1, IsInstall: true}
	top, err := chartutil.ToRenderValuesWithSchemaValidation(ch, vals, opts, caps, false)
	if err != nil {
		return "", err
	}
	files, err := engine.Render(ch, top)
	if err != nil {
		return "", err
	}
	for name := range files {
		if strings.HasSuffix(name, "NOTES.txt") {
			delete(files, name)
		}
	}
	_, manifests, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, m := range manifests {
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", m.Name, m.Content)
	}
	return b.String(), nil
}

// Parse splits a multi-document YAML stream into objects, skipping empty documents.
func Parse(r io.Reader) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(r, 4096)
	var out []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, err
		}
		if len(m) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
	return out, nil
}

// Find returns the object of the given kind (and group, when it contains a ".") and name.
func Find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	group := ""
	if i := strings.Index(kind, "."); i > 0 {
		kind, group = kind[:i], kind[i+1:]
	}
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		if gvk.Kind == kind && o.GetName() == name && (group == "" || gvk.Group == group) {
			return o
		}
	}
	return nil
}

// Kinds lists "Kind/name" of every object, sorted, for failure messages.
func Kinds(objs []*unstructured.Unstructured) string {
	var s []string
	for _, o := range objs {
		s = append(s, o.GetKind()+"/"+o.GetName())
	}
	sort.Strings(s)
	var b bytes.Buffer
	for _, x := range s {
		b.WriteString(x + "\n")
	}
	return b.String()
}
