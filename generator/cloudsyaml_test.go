package generator

import (
	"testing"

	"sigs.k8s.io/yaml"
)

// cloudsYAMLReference is clouds.yaml as first written: nested maps through yaml.Marshal.
func cloudsYAMLReference(id, secret, authURL, iface, region string, verify bool) ([]byte, error) {
	return yaml.Marshal(map[string]any{"clouds": map[string]any{"openstack": map[string]any{
		"auth": map[string]any{
			"application_credential_id":     id,
			"application_credential_secret": secret,
			"auth_url":                      authURL,
		},
		"auth_type":            "v3applicationcredential",
		"identity_api_version": 3,
		"interface":            iface,
		"region_name":          region,
		"verify":               verify,
	}}})
}

func checkCloudsYAML(t *testing.T, id, secret, authURL, region string, verify bool) {
	t.Helper()
	want, wantErr := cloudsYAMLReference(id, secret, authURL, "public", region, verify)
	got, err := marshalYAML(newCloudsYAML(id, secret, authURL, "public", region, verify))
	if (err == nil) != (wantErr == nil) {
		t.Fatalf("error %v, the reference gives %v", err, wantErr)
	}
	if string(got) != string(want) {
		t.Errorf("clouds.yaml of (%q, %q, %q, %q, %t) is\n%s\nthe reference gives\n%s", id, secret, authURL, region, verify, got, want)
	}
}

var cloudsCases = [][4]string{
	{"0f9e8d7c6b5a49384726150493827160", "fixture-appcred-secret-NOT-REAL-7f3a", "https://keystone.example.org:5000/v3", "RegionOne"},
	{"", "", "", ""},
	{"123", "yes", "null", "~"},
	{"a: b", "- x", "#c", "'q'"},
	{"ünï", "multi\nline", " lead", "trail "},
	{"\u2028", "a\xffb", "{x}", "0x1F"},
}

func TestCloudsYAML(t *testing.T) {
	t.Parallel()
	for _, c := range cloudsCases {
		for _, verify := range []bool{true, false} {
			checkCloudsYAML(t, c[0], c[1], c[2], c[3], verify)
		}
	}
}

// FuzzCloudsYAML holds the struct form of clouds.yaml equal to the nested maps it replaced.
func FuzzCloudsYAML(f *testing.F) {
	for _, c := range cloudsCases {
		f.Add(c[0], c[1], c[2], c[3], true)
	}
	f.Fuzz(checkCloudsYAML)
}
