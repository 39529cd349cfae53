package reconciler

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"text/template"

	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/gitrepo"
	"sigs.k8s.io/yaml"
)

// Committer renders events and commits them to a Git repository.
type Committer struct {
	Repo   *gitrepo.Repo
	Config *generator.Config
	// Secrets encodes the Secrets of a cluster directory given how to read its current
	// files (e.g. a SOPS encrypter's Encoder); nil leaves Secrets out, and an event that
	// carries Secret material then fails rather than writing it in plaintext.
	Secrets func(existing func(name string) ([]byte, bool)) generator.SecretEncoder
	// Extra files added to every change (e.g. the repository's .sops.yaml).
	Extra map[string][]byte
	// ReviewBranch, when set, is a text/template for review-mode branches, e.g.
	// "magnum/{{.StackID}}/{{.EventID}}"; main is then left alone.
	ReviewBranch string
}

// branchVars are the fields a ReviewBranch template can use.
type branchVars struct{ StackID, EventID, ClusterUUID, Operation string }

// Apply renders one event and commits it. A change that matches the repository is a
// silent no-op (Result.NoOp).
func (c *Committer) Apply(ctx context.Context, ev *generator.ClusterEvent) (*gitrepo.Result, *generator.Result, error) {
	res, err := generator.Render(ev, c.Config)
	if err != nil {
		return nil, nil, err
	}
	dir := generator.ClusterDir(c.Config, res.Namespace, res.ReleaseName)
	names, err := c.Repo.ListDir(dir)
	if err != nil {
		return nil, res, err
	}
	opts := generator.FileOptions{Existing: names}
	if c.Secrets != nil {
		opts.Secrets = c.Secrets(func(name string) ([]byte, bool) {
			b, ok, err := c.Repo.ReadFile(path.Join(dir, name))
			return b, ok && err == nil
		})
	} else if n := len(res.Objects.Secrets); n > 0 {
		return nil, res, fmt.Errorf("%s: %d Secrets to write and no encryption configured (sops.age_recipients)", res, n)
	}
	fs, err := res.Files(c.Config, opts)
	if err != nil {
		return nil, res, err
	}
	if len(res.Objects.Secrets) > 0 {
		for p, b := range c.Extra {
			fs.Files[p] = b
		}
	}
	old, err := c.previousValues(dir)
	if err != nil {
		return nil, res, err
	}
	change := CommitChange(ev, res, fs, old)
	if c.ReviewBranch != "" {
		t, err := template.New("branch").Option("missingkey=error").Parse(c.ReviewBranch)
		if err != nil {
			return nil, res, fmt.Errorf("review branch template: %w", err)
		}
		var b bytes.Buffer
		eid := cmp.Or(res.EventID, string(res.Operation))
		if err := t.Execute(&b, branchVars{StackID: res.ReleaseName, EventID: eid, ClusterUUID: res.ClusterUUID, Operation: string(res.Operation)}); err != nil {
			return nil, res, fmt.Errorf("review branch template: %w", err)
		}
		change.Branch = b.String()
	}
	gr, err := c.Repo.Apply(ctx, change)
	return gr, res, err
}

// previousValues reads the chart values the repository holds for a cluster, from its
// HelmRelease or Application; nil when there is none.
func (c *Committer) previousValues(dir string) (map[string]any, error) {
	for _, f := range []string{generator.HelmReleaseFile, generator.ApplicationFile} {
		b, ok, err := c.Repo.ReadFile(path.Join(dir, f))
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		var doc struct {
			Spec struct {
				Values json.RawMessage `json:"values"`
				Source struct {
					Helm struct {
						ValuesObject json.RawMessage `json:"valuesObject"`
					} `json:"helm"`
				} `json:"source"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal(b, &doc); err != nil {
			return nil, fmt.Errorf("%s/%s: %w", dir, f, err)
		}
		raw := doc.Spec.Values
		if strings.TrimSpace(string(raw)) == "" {
			raw = doc.Spec.Source.Helm.ValuesObject
		}
		var v map[string]any
		if len(raw) > 0 {
			if err := json.Unmarshal(raw, &v); err != nil {
				return nil, err
			}
		}
		return v, nil
	}
	return nil, nil
}
