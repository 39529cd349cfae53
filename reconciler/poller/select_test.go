package poller

import (
	"testing"

	"github.com/magnum-gitops/magnum-gitops/reconciler/openstack"
)

func TestSelectTemplates(t *testing.T) {
	tmpl := openstack.ClusterTemplate{Driver: "k8s_capi_helm_v1", Labels: map[string]string{"gitops": "true"}}
	tests := []struct {
		label, driver string
		t             openstack.ClusterTemplate
		want          bool
		wantErr       bool
	}{
		{label: "gitops=true", t: tmpl, want: true},
		{label: "gitops=false", t: tmpl, want: false},
		{label: "gitops", t: tmpl, want: true},
		{label: "other", t: tmpl, want: false},
		{driver: "k8s_capi_helm_v1", t: tmpl, want: true},
		{driver: "k8s_capi_helm_v1", t: openstack.ClusterTemplate{}, want: false},
		{label: "gitops=true", driver: "heat", t: tmpl, want: false},
		{label: "gitops=true", driver: "k8s_capi_helm_v1", t: tmpl, want: true},
		{wantErr: true},
		{label: "=true", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.label+"/"+tc.driver, func(t *testing.T) {
			sel, err := SelectTemplates(tc.label, tc.driver)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want error %v", err, tc.wantErr)
			}
			if err == nil && sel(tc.t) != tc.want {
				t.Errorf("selected %v, want %v", !tc.want, tc.want)
			}
		})
	}
}
