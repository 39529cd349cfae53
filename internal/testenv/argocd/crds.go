package argocd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// crdFiles are the CRDs the controllers need, as hack/argocd.sh copies them from the
// release's manifests/crds. testenv installs an older release's Application CRD (the
// newest whose module the project's Go can download); a CRD's schema prunes the fields it
// does not know, so the controller's status must be stored under its own release's
// schema. The AppProject CRD testenv does not install at all.
var crdFiles = []string{"crds/application-crd.yaml", "crds/appproject-crd.yaml"}

// installCRDs creates or replaces the CRDs and waits until the API server serves them.
func (a *Argo) installCRDs(ctx context.Context) {
	t := a.t
	t.Helper()
	for _, f := range crdFiles {
		crd, err := readCRD(filepath.Join(a.bin, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := upsert(ctx, a.Client, crd); err != nil {
			t.Fatalf("installing CRD %s: %v", crd.Name, err)
		}
		if err := waitEstablished(ctx, a, crd.Name); err != nil {
			t.Fatal(err)
		}
	}
}

// readCRD reads a file holding one CRD.
func readCRD(path string) (*apiextensionsv1.CustomResourceDefinition, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(data, crd); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if crd.Kind != "CustomResourceDefinition" || crd.Name == "" {
		return nil, fmt.Errorf("%s: not a CustomResourceDefinition", path)
	}
	return crd, nil
}

// waitEstablished polls the CRD until its Established condition is True.
func waitEstablished(ctx context.Context, a *Argo, name string) error {
	for {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		err := a.Client.Get(ctx, client.ObjectKey{Name: name}, crd)
		if err == nil {
			for _, c := range crd.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("CRD %s not established: %v (last error: %v)", name, ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
