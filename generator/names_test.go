package generator_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/magnum"
)

func TestParityNames(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"cluster_example_$A": "cluster-example-a", "--Prod  A--": "prod-a", "": "", "ÄÖ": "", "a.b.c": "a-b-c",
	} {
		if got := magnum.SanitizedName(in); got != want {
			t.Errorf("SanitizedName(%q) = %q, want %q", in, got, want)
		}
	}
	if got := magnum.ResourceName("r-1", "cloud-credentials"); got != "r-1-cloud-credentials" {
		t.Errorf("ResourceName = %q", got)
	}
	// The driver re-sanitizes R-x, collapsing the "--" of adopted names; the chart does not.
	if got := magnum.ResourceName("a-that--abc", "ca"); got != "a-that-abc-ca" {
		t.Errorf("ResourceName of an adopted -- name = %q", got)
	}
	if got := magnum.ChartComponentName(strings.Repeat("r", 50), strings.Repeat("w", 20)); len(got) != 63 || strings.HasSuffix(got, "-") {
		t.Errorf("ChartComponentName = %q (%d)", got, len(got))
	}
	for pid, want := range map[string]string{"123-456F": "magnum-123456f", "fake_project": "magnum-fakeproject",
		"9f3c1b2a4d5e4f6a8b7c6d5e4f3a2b1c": "magnum-9f3c1b2a4d5e4f6a8b7c6d5e4f3a2b1c"} {
		if got := magnum.Namespace("magnum", pid); got != want {
			t.Errorf("Namespace(%q) = %q, want %q", pid, got, want)
		}
	}
}

func TestParityGeneratedReleaseName(t *testing.T) {
	t.Parallel()
	shape := regexp.MustCompile(`^[a-z0-9-]{1,30}-[a-z2-7]{12}$`)
	uuid := "8b2c3d5f-5f60-417e-9d3a-35465768798a"
	r := magnum.GenerateReleaseName("A-very-long-cluster-name-that-exceeds-thirty-chars", uuid)
	if !shape.MatchString(r) || strings.Contains(r, "--") || !strings.HasPrefix(r, "a-very-long-cluster-name-that-") {
		t.Errorf("release name %q: want sanitized(name)[:30] without a trailing '-', then 12 base32 characters", r)
	}
	if r != magnum.GenerateReleaseName("A-very-long-cluster-name-that-exceeds-thirty-chars", strings.ToUpper(uuid)) {
		t.Error("release name is not stable for the same cluster")
	}
	if r == magnum.GenerateReleaseName("A-very-long-cluster-name-that-exceeds-thirty-chars", "9b2c3d5f-5f60-417e-9d3a-35465768798a") {
		t.Error("two clusters with the same name got the same release name")
	}
	res := fixtureResult(t, "27-generated-release-name.yaml")
	if !res.ReleaseNameGenerated || res.ReleaseName != r {
		t.Errorf("render reported stack_id %q (generated %v), want %q", res.ReleaseName, res.ReleaseNameGenerated, r)
	}
	if res := fixtureResult(t, "01-prod-a-create.yaml"); res.ReleaseNameGenerated || res.ReleaseName != "prod-a-2b7xq4mzkd5h" {
		t.Errorf("an existing stack_id must be kept, got %q", res.ReleaseName)
	}
}
