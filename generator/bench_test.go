package generator_test

import (
	"testing"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"

	"github.com/magnum-gitops/magnum-gitops/generator"
)

// BenchmarkRender measures one full render: decode the event, compute the values, build
// every object and serialise the repository change (Secrets included).
func BenchmarkRender(b *testing.B) {
	data, err := readFixture("01-prod-a-create.yaml")
	if err != nil {
		b.Fatal(err)
	}
	cfg := generator.DefaultConfig()
	site := generator.MustSite(cfg)
	b.ReportAllocs()
	for b.Loop() {
		ev, err := v1alpha1.DecodeEvent(data)
		if err != nil {
			b.Fatal(err)
		}
		res, err := generator.Render(ev, site)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := res.Files(&cfg, generator.FileOptions{Secrets: generator.PlaintextSecrets}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRenderFiles measures what a resync does per unchanged cluster once the event is
// decoded: the values and every manifest serialised into the FileSet (Secrets included).
func BenchmarkRenderFiles(b *testing.B) {
	ev := fixtureEvent(b, "01-prod-a-create.yaml")
	cfg := generator.DefaultConfig()
	site := generator.MustSite(cfg)
	b.ReportAllocs()
	for b.Loop() {
		res, err := generator.Render(ev, site)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := res.Files(&cfg, generator.FileOptions{Secrets: generator.PlaintextSecrets}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFiles measures the serialisation alone: an already rendered result laid out as
// files (Secrets included).
func BenchmarkFiles(b *testing.B) {
	ev := fixtureEvent(b, "01-prod-a-create.yaml")
	cfg := generator.DefaultConfig()
	site := generator.MustSite(cfg)
	res, err := generator.Render(ev, site)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := res.Files(&cfg, generator.FileOptions{Secrets: generator.PlaintextSecrets}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMarshalHelmRelease measures the largest file, the HelmRelease with the values.
func BenchmarkMarshalHelmRelease(b *testing.B) {
	ev := fixtureEvent(b, "01-prod-a-create.yaml")
	cfg := generator.DefaultConfig()
	site := generator.MustSite(cfg)
	res, err := generator.Render(ev, site)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := generator.MarshalObject(res.Objects.HelmRelease); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeEvent measures the event decoding that BenchmarkRender includes.
func BenchmarkDecodeEvent(b *testing.B) {
	data, err := readFixture("01-prod-a-create.yaml")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v1alpha1.DecodeEvent(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRenderValues measures the values alone, from an already decoded event.
func BenchmarkRenderValues(b *testing.B) {
	ev := fixtureEvent(b, "01-prod-a-create.yaml")
	cfg := generator.DefaultConfig()
	site := generator.MustSite(cfg)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := generator.Render(ev, site); err != nil {
			b.Fatal(err)
		}
	}
}
