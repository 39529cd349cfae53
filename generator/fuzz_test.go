package generator_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"

	"github.com/magnum-gitops/magnum-gitops/fixtures"
	"github.com/magnum-gitops/magnum-gitops/generator"
)

// FuzzRender feeds arbitrary documents through the decoder, the generator and the file
// layout. Whatever the input, there must be no panic, every refusal must be an input
// error, and every accepted event must serialise.
//
//	go test ./generator -run '^$' -fuzz FuzzRender -fuzztime 60s
func FuzzRender(f *testing.F) {
	names, err := fixtures.EventNames()
	if err != nil {
		f.Fatal(err)
	}
	for _, n := range names {
		b, err := fixtures.Events.ReadFile("events/" + n)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"apiVersion":"magnum-gitops.io/v1alpha1","kind":"ClusterEvent","operation":"create_cluster","cluster":{"labels":{"a":1e400}}}`))
	f.Add([]byte("apiVersion: magnum-gitops.io/v1alpha1\nkind: ClusterEvent\noperation: delete_cluster\ncluster: {uuid: 3e9b7c52-1d4a-4f8e-9b6c-2a7d5e8f1c03, project_id: p}\n"))
	cfg := generator.DefaultConfig()
	site := generator.MustSite(cfg)
	f.Fuzz(func(t *testing.T, data []byte) {
		ev, err := v1alpha1.DecodeEvent(data)
		if err != nil {
			if !errors.Is(err, v1alpha1.ErrInvalidInput) {
				t.Fatalf("decode error is not an input error: %v", err)
			}
			return
		}
		res, err := generator.Render(ev, site)
		if err != nil {
			if !errors.Is(err, v1alpha1.ErrInvalidInput) {
				t.Fatalf("render error is not an input error: %v", err)
			}
			return
		}
		if _, err := json.Marshal(res.Values); err != nil {
			t.Fatalf("values do not serialise: %v", err)
		}
		if _, err := res.Files(&cfg, generator.FileOptions{Secrets: generator.PlaintextSecrets}); err != nil {
			t.Fatalf("files: %v", err)
		}
	})
}
