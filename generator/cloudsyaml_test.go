package generator

import (
	"bytes"
	"encoding/json"
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

// checkCloudsYAML holds clouds.yaml to two things. Read back as Flux and Cluster API read
// YAML (sigs.k8s.io/yaml), it gives exactly the values written. Where the reference writer
// could write the same values (it refuses C1 controls and DEL, and turns U+0085 into a
// space) on as many lines (it folds a line past 80 columns; TestMarshalObjectCases), the
// bytes are the reference's, so a new build rewrites no Secret.
func checkCloudsYAML(t *testing.T, id, secret, authURL, region string, verify bool) {
	t.Helper()
	got, err := marshalYAML(newCloudsYAML(id, secret, authURL, "public", region, verify))
	if err != nil {
		t.Fatalf("clouds.yaml of (%q, %q, %q, %q, %t): %v", id, secret, authURL, region, verify, err)
	}
	in := jsonRoundTrip(t, newCloudsYAML(id, secret, authURL, "public", region, verify))
	var back cloudsYAML
	if err := yaml.UnmarshalStrict(got, &back); err != nil {
		t.Fatalf("clouds.yaml of (%q, %q, %q, %q, %t) does not read back: %v\n%s", id, secret, authURL, region, verify, err, got)
	}
	if back != *in {
		t.Fatalf("clouds.yaml of (%q, %q, %q, %q, %t) reads back as %+v\n%s", id, secret, authURL, region, verify, back, got)
	}
	want, wantErr := cloudsYAMLReference(id, secret, authURL, "public", region, verify)
	if wantErr != nil {
		return
	}
	var ref cloudsYAML
	if err := yaml.Unmarshal(want, &ref); err != nil || ref != *in || bytes.Count(want, []byte("\n")) != bytes.Count(got, []byte("\n")) {
		return
	}
	if string(got) != string(want) {
		t.Errorf("clouds.yaml of (%q, %q, %q, %q, %t) is\n%s\nthe reference gives\n%s", id, secret, authURL, region, verify, got, want)
	}
}

// jsonRoundTrip is c as its JSON gives it back: the values a Secret can hold, invalid
// UTF-8 already replaced by U+FFFD as encoding/json does on the way in.
func jsonRoundTrip(t *testing.T, c *cloudsYAML) *cloudsYAML {
	t.Helper()
	j, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var out cloudsYAML
	if err := json.Unmarshal(j, &out); err != nil {
		t.Fatal(err)
	}
	return &out
}

var cloudsCases = [][4]string{
	{"0f9e8d7c6b5a49384726150493827160", "fixture-appcred-secret-NOT-REAL-7f3a", "https://keystone.example.org:5000/v3", "RegionOne"},
	{"", "", "", ""},
	{"123", "yes", "null", "~"},
	{"a: b", "- x", "#c", "'q'"},
	{"ünï", "multi\nline", " lead", "trail "},
	{"\u2028", "a\xffb", "{x}", "0x1F"},
	{"a\x7fb", "a\u0085b", "a\u0080b", "\x01"},
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
