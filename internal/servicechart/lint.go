package servicechart

import (
	"errors"
	"fmt"
	"path/filepath"

	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
)

// ErrLint reports that `helm lint` found an error or a warning in the chart.
var ErrLint = errors.New("helm lint")

// Lint runs `helm lint --strict --kube-version 1.30` through the Helm SDK on the chart with the given values
// (over values.yaml) and returns every message; the error joins those that are warnings or
// worse.
func Lint(root, namespace string, values map[string]any) ([]support.Message, error) {
	kv := KubeVersion
	l := lint.AllWithKubeVersion(filepath.Join(root, Dir), values, namespace, &kv)
	var errs []error
	for _, m := range l.Messages {
		if m.Severity >= support.WarningSev {
			errs = append(errs, fmt.Errorf("%w: %s", ErrLint, m))
		}
	}
	return l.Messages, errors.Join(errs...)
}
