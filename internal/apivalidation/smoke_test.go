package apivalidation

import (
	"context"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
)

func TestCRDsInstalled(t *testing.T) {
	testenv.Require(t, env)
	var list apiextensionsv1.CustomResourceDefinitionList
	if err := env.Client.List(context.Background(), &list); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, c := range list.Items {
		names[c.Name] = true
	}
	for _, want := range []string{"clusters.cluster.x-k8s.io", "kubeadmcontrolplanes.controlplane.cluster.x-k8s.io",
		"kubeadmconfigtemplates.bootstrap.cluster.x-k8s.io", "helmreleases.helm.toolkit.fluxcd.io",
		"helmrepositories.source.toolkit.fluxcd.io", "ocirepositories.source.toolkit.fluxcd.io",
		"openstackclusters.infrastructure.cluster.x-k8s.io", "helmreleases.addons.stackhpc.com", "manifests.addons.stackhpc.com"} {
		if !names[want] {
			t.Errorf("CRD %s not installed", want)
		}
	}
	t.Logf("%d CRDs installed", len(list.Items))
}
