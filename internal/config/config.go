// Package config reads the --config file: the generator's sections and those of the
// packages that write to Git, serve and reach OpenStack. It decodes strictly (an unknown
// key is an error naming it), resolves relative paths against the file's directory, reads
// the small files the generator needs and checks every section. It builds no client: cmd
// turns the sections into a repository, an encrypter, a poller.
package config

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/gitrepo"
	"github.com/magnum-gitops/magnum-gitops/magnum"

	"github.com/magnum-gitops/magnum-gitops/generator"
)

// File is the --config document: the generator's sections (magnum, flux,
// values_overlay) plus the sections of the packages that write to Git.
type File struct {
	generator.Config `json:",inline"`
	Git              Git   `json:"git,omitempty"`
	Sops             Sops  `json:"sops,omitempty"`
	Serve            Serve `json:"serve,omitempty"`
	// Openstack says how to reach OpenStack: the resolver, health reporting to Magnum, and
	// serve --source magnum's poller.
	OpenStack OpenStack `json:"openstack,omitempty"`
	// MagnumConf is an existing magnum.conf whose driver options are read first; the
	// magnum section of this file then overrides them.
	MagnumConf string `json:"magnum_conf,omitempty"`
	// Site is the generator's sections as Load validated them: what renders take.
	Site *generator.Site `json:"-"`
}

// Load reads a YAML configuration over the defaults. Unknown keys are errors: a
// misspelt magnum.conf option would otherwise silently keep its default.
func Load(path string) (*File, error) {
	cfg := File{Config: generator.DefaultConfig()}
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, Invalid(fmt.Errorf("--config: %w", err))
		}
		if err := decodeStrict(data, &cfg); err != nil {
			return nil, fmt.Errorf("config %s: %w", path, err)
		}
		// Relative paths in the file are relative to its directory (see paths.go).
		resolveConfigPaths(&cfg, configDir(path))
		if cfg.MagnumConf != "" {
			// Defaults, then magnum.conf, then this file's own magnum section.
			ini, err := os.ReadFile(cfg.MagnumConf)
			if err != nil {
				return nil, Invalid(fmt.Errorf("magnum_conf: %w", err))
			}
			own := cfg
			cfg = File{Config: generator.DefaultConfig()}
			if err := generator.ParseMagnumConf(ini, &cfg.Magnum); err != nil {
				return nil, err
			}
			if err := decodeStrict(data, &cfg); err != nil {
				return nil, fmt.Errorf("config %s: %w", path, err)
			}
			keepFilePaths(&cfg, &own)
		}
	}
	// The per-namespace GitRepositories fetch the repository serve pushes to, unless the
	// file says how Flux reaches it (another host name, ssh).
	if f := &cfg.Flux; f.PerNamespace() && f.Git.URL == "" && checkGitURL(cfg.Git.URL) == nil {
		f.Git.URL = cfg.Git.URL
		if cfg.Git.Branch != "" {
			f.Git.Branch = cfg.Git.Branch
		}
	}
	// Argo CD's Applications with chart patches read the repository serve pushes to, unless
	// the file says how Argo CD reaches it. Whatever the format: --format argo may set it
	// after Load. A local path is no URL Argo CD's repo-server can fetch: none is taken.
	if a := &cfg.Argo; a.RepoURL == "" && checkGitURL(cfg.Git.URL) == nil && remoteGitURL(cfg.Git.URL) {
		a.RepoURL = cfg.Git.URL
	}
	if a := &cfg.Argo; a.RepoURL != "" && a.TargetRevision == "" {
		a.TargetRevision = cmp.Or(cfg.Git.Branch, "main")
	}
	if err := loadRegistryFiles(&cfg.Registries); err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	site, err := generator.NewSite(cfg.Config)
	if err != nil {
		return nil, fmt.Errorf("config %s:\n%w", path, err)
	}
	cfg.Site = site
	// flux.path and the management clusters' paths become paths in Git: no spelling of
	// .git, .gitmodules and the like.
	if err := gitrepo.ValidPath(cfg.Flux.Path); err != nil {
		return nil, fmt.Errorf("config %s: %w", path, &v1alpha1.FieldError{Field: "flux.path", Message: err.Error()})
	}
	if cfg.Flux.Layout == generator.LayoutBranchPerNamespace && strings.HasPrefix(cmp.Or(cfg.Git.Branch, "main"), magnum.PublishedBranchPrefix) {
		return nil, fmt.Errorf("config %s: %w", path, &v1alpha1.FieldError{Field: "git.branch",
			Message: "must not start with " + magnum.PublishedBranchPrefix + " with flux.layout: " + generator.LayoutBranchPerNamespace + ": serve publishes the namespaces' branches there"})
	}
	for _, m := range cfg.ManagementClusters {
		if err := gitrepo.ValidPath(m.Path); err != nil {
			return nil, fmt.Errorf("config %s: %w", path, &v1alpha1.FieldError{Field: "management_clusters[" + m.Name + "].path", Message: err.Error()})
		}
	}
	if err := cfg.OpenStack.Validate(); err != nil {
		return nil, Invalid(fmt.Errorf("config %s: %w", path, err))
	}
	if err := cfg.Serve.Validate(); err != nil {
		return nil, Invalid(fmt.Errorf("config %s: %w", path, err))
	}
	return &cfg, nil
}

// decodeStrict decodes one YAML document into v: a second document, a duplicate key,
// excessive nesting or an unknown key is an error naming it, and no error quotes a value
// (configuration may hold a URL with credentials).
func decodeStrict(data []byte, v any) error {
	j, err := v1alpha1.ToJSON(data)
	if err != nil {
		return err
	}
	d := json.NewDecoder(bytes.NewReader(j))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		msg := cleanYAMLError(err)
		if name, ok := strings.CutPrefix(msg, "unknown field "); ok {
			return &v1alpha1.FieldError{Field: keyPath(j, strings.Trim(name, `"`)), Message: "unknown field (a misspelt option would silently keep its default)"}
		}
		if fe, ok := v1alpha1.TypeError(err); ok {
			return fe
		}
		// encoding/json passes an UnmarshalJSON error on without the key: find it.
		var doc any
		if json.Unmarshal(j, &doc) == nil {
			if key, ok := badDurationKey(doc, reflect.TypeOf(v), ""); ok {
				return &v1alpha1.FieldError{Field: key, Message: "must be a duration (e.g. 5m, 1h30m)"}
			}
		}
		return &v1alpha1.FieldError{Field: "(config)", Message: v1alpha1.Redact(msg)}
	}
	return nil
}

// badDurationKey is the dotted key of the first value in doc (decoded JSON) that t
// decodes as a generator.Duration and that is not one, in key order.
func badDurationKey(doc any, t reflect.Type, at string) (string, bool) {
	pointer := false
	for t.Kind() == reflect.Pointer {
		t, pointer = t.Elem(), true
	}
	if t == reflect.TypeFor[generator.Duration]() {
		if doc == nil && pointer {
			return "", false // null leaves a pointer nil
		}
		// Judged as the decoder judges it: a bare 0 is a duration, "5" is not.
		raw, err := json.Marshal(doc)
		return at, err != nil || new(generator.Duration).UnmarshalJSON(raw) != nil
	}
	join := func(k string) string { return strings.TrimPrefix(at+"."+k, ".") }
	switch t.Kind() {
	case reflect.Struct:
		m, _ := doc.(map[string]any)
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if f.Anonymous && name == "" {
				if key, bad := badDurationKey(doc, f.Type, at); bad {
					return key, true
				}
				continue
			}
			if name == "" {
				name = f.Name
			}
			if v, ok := m[name]; ok && name != "-" && f.IsExported() {
				if key, bad := badDurationKey(v, f.Type, join(name)); bad {
					return key, true
				}
			}
		}
	case reflect.Map:
		m, _ := doc.(map[string]any)
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if key, bad := badDurationKey(m[k], t.Elem(), join(k)); bad {
				return key, true
			}
		}
	case reflect.Slice:
		l, _ := doc.([]any)
		for i, v := range l {
			if key, bad := badDurationKey(v, t.Elem(), fmt.Sprintf("%s[%d]", at, i)); bad {
				return key, true
			}
		}
	}
	return "", false
}

// keyPath is the dotted path of key in a JSON document (the decoder names only the key);
// several places are joined with " or ", and a key found nowhere is returned as it is.
func keyPath(doc []byte, key string) string {
	var v any
	if json.Unmarshal(doc, &v) != nil {
		return key
	}
	var found []string
	var walk func(v any, at string)
	walk = func(v any, at string) {
		switch t := v.(type) {
		case map[string]any:
			for k, c := range t {
				p := k
				if at != "" {
					p = at + "." + k
				}
				if k == key {
					found = append(found, p)
				}
				walk(c, p)
			}
		case []any:
			for i, c := range t {
				walk(c, fmt.Sprintf("%s[%d]", at, i))
			}
		}
	}
	walk(v, "")
	if len(found) == 0 {
		return key
	}
	slices.Sort(found)
	return strings.Join(found, " or ")
}

// cleanYAMLError drops the decoder's layered prefixes ("error unmarshaling JSON: while
// decoding JSON: json: ...") so the message names the field first.
func cleanYAMLError(err error) string {
	s := err.Error()
	for _, p := range []string{"error unmarshaling JSON: ", "while decoding JSON: ", "json: "} {
		s = strings.ReplaceAll(s, p, "")
	}
	return s
}

// invalidError marks an error as bad configuration (exit status 2) without changing its
// text, which already names the option.
type invalidError struct{ err error }

func (e invalidError) Error() string   { return e.err.Error() }
func (e invalidError) Unwrap() []error { return []error{e.err, v1alpha1.ErrInvalidInput} }

// Invalid marks err as bad input (exit status 2; errors.Is ErrInvalidInput) without
// changing its text; nil stays nil.
func Invalid(err error) error {
	if err == nil {
		return nil
	}
	return invalidError{err}
}

// remoteGitURL reports whether a git.url names a server (http, https, ssh, or scp-like
// user@host:path) rather than a path on this machine.
func remoteGitURL(u string) bool {
	scheme, _, ok := strings.Cut(u, "://")
	if !ok {
		at, colon := strings.Index(u, "@"), strings.Index(u, ":")
		return at > 0 && colon > at
	}
	return scheme == "https" || scheme == "http" || scheme == "ssh"
}
