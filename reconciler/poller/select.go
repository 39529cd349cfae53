package poller

import (
	"errors"
	"fmt"
	"strings"

	"github.com/magnum-gitops/magnum-gitops/reconciler/openstack"
)

// SelectTemplates returns a Poller.Select that picks the cluster templates meant for this
// service: label is "key=value" (the template label key has exactly that value) or "key"
// (the label is present, whatever its value); driver is the template's Magnum driver
// name (Magnum 2024.1 and newer return it; older Magnum's templates never match a
// driver). With both, a template must match both. With neither, it is an error: polling
// every cluster of a cloud by accident would take them all over.
func SelectTemplates(label, driver string) (func(openstack.ClusterTemplate) bool, error) {
	if label == "" && driver == "" {
		return nil, errors.New("select: set a template label (e.g. gitops=true) or a driver name")
	}
	key, value, hasValue := strings.Cut(label, "=")
	if label != "" && key == "" {
		return nil, fmt.Errorf("select: label %q has no key", label)
	}
	return func(t openstack.ClusterTemplate) bool {
		if driver != "" && t.Driver != driver {
			return false
		}
		if label == "" {
			return true
		}
		v, ok := t.Labels[key]
		return ok && (!hasValue || v == value)
	}, nil
}
