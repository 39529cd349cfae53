package migrate

import (
	"errors"
	"fmt"

	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
)

// ReadRelease reads the deployed release name of namespace from Helm's release storage
// (the Secrets helm and helm-controller keep), read-only: exactly what Flux's
// helm-controller finds, and upgrades, when the cluster's HelmRelease first applies.
func ReadRelease(secrets typedcorev1.SecretsGetter, namespace, name string) (*release.Release, error) {
	st := storage.Init(driver.NewSecrets(secrets.Secrets(namespace)))
	rel, err := st.Deployed(name)
	if errors.Is(err, driver.ErrNoDeployedReleases) || errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, fmt.Errorf("release %s in namespace %s: %w", name, namespace, ErrNoRelease)
	}
	if err != nil {
		return nil, fmt.Errorf("release %s in namespace %s: %w", name, namespace, err)
	}
	return rel, nil
}
