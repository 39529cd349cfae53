package servicechart

import (
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
)

// The release deploy/service stands for: the names `helm install magnum-gitops
// deploy/chart/magnum-gitops -n magnum-gitops` gives every object.
const (
	DeployRelease   = "magnum-gitops"
	DeployNamespace = "magnum-gitops"
	// DeployValues is the chart's values file deploy/service is rendered with, relative to
	// the chart: the defaults, the references the chart requires, and the Namespace.
	DeployValues = "ci/deploy-service-values.yaml"
)

// deployFiles maps a template of the chart to the file of deploy/service its objects go
// to. The Namespace's file sorts first, so `kubectl apply -f deploy/service/` creates it
// before the objects in it.
var deployFiles = map[string]string{
	"namespace.yaml":       "00-namespace.yaml",
	"configmap.yaml":       "config.yaml",
	"deployment.yaml":      "deployment.yaml",
	"service.yaml":         "deployment.yaml",
	"pdb.yaml":             "deployment.yaml",
	"networkpolicy.yaml":   "deployment.yaml",
	"serviceaccount.yaml":  "rbac.yaml",
	"rbac.yaml":            "rbac.yaml",
	"admissionpolicy.yaml": "rbac.yaml",
}

// deployHeader opens every generated file.
const deployHeader = "# Generated from the Helm chart " + Dir + " by `make deploy-manifests`\n" +
	"# (values: " + Dir + "/" + DeployValues + "); do not edit: change the chart and run it.\n" +
	"# kubectl apply -f deploy/service/ creates the Namespace first (00-namespace.yaml).\n"

var sourceLine = regexp.MustCompile(`(?m)^# Source: [^/]+/templates/(\S+)$`)

// DeployManifests renders the chart as deploy/service holds it: file name → contents.
func DeployManifests(root string, ch *chart.Chart) (map[string]string, error) {
	vals, err := chartutil.ReadValuesFile(filepath.Join(root, Dir, DeployValues))
	if err != nil {
		return nil, err
	}
	manifest, err := Render(ch, DeployRelease, DeployNamespace, vals)
	if err != nil {
		return nil, err
	}
	files := map[string]string{}
	for doc := range strings.SplitSeq(manifest, "\n---\n") {
		doc = strings.TrimSpace(strings.TrimPrefix(doc, "---\n"))
		if doc == "" {
			continue
		}
		m := sourceLine.FindStringSubmatch(doc)
		if m == nil {
			return nil, fmt.Errorf("servicechart: a rendered object without its template: %.80q", doc)
		}
		name, ok := deployFiles[path.Base(m[1])]
		if !ok {
			return nil, fmt.Errorf("servicechart: %s renders objects deploy/service has no file for", m[1])
		}
		if files[name] == "" {
			files[name] = deployHeader
		}
		files[name] += "---\n" + doc + "\n"
	}
	return files, nil
}
