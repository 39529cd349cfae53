package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"

	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/generator"
)

// fileConfig is the --config document: the generator's sections (magnum, flux,
// values_overlay) plus the sections of the packages that write to Git.
type fileConfig struct {
	generator.Config `json:",inline"`
	Git              gitConfig   `json:"git,omitempty"`
	Sops             sopsConfig  `json:"sops,omitempty"`
	Serve            serveConfig `json:"serve,omitempty"`
	// MagnumConf is an existing magnum.conf whose driver options are read first; the
	// magnum section of this file then overrides them.
	MagnumConf string `json:"magnum_conf,omitempty"`
}

// loadConfig reads a YAML configuration over the defaults. Unknown keys are errors: a
// misspelt magnum.conf option would otherwise silently keep its default.
func loadConfig(path string) (*fileConfig, error) {
	cfg := fileConfig{Config: generator.DefaultConfig()}
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("reading config: %w", err)
		}
		if err := yaml.UnmarshalStrict(data, &cfg); err != nil {
			return nil, &v1alpha1.FieldError{Field: "config " + path, Message: cleanYAMLError(err)}
		}
		if cfg.MagnumConf != "" {
			// Defaults, then magnum.conf, then this file's own magnum section.
			ini, err := os.ReadFile(cfg.MagnumConf)
			if err != nil {
				return nil, fmt.Errorf("magnum_conf: %w", err)
			}
			cfg = fileConfig{Config: generator.DefaultConfig()}
			if err := generator.ParseMagnumConf(ini, &cfg.Magnum); err != nil {
				return nil, err
			}
			if err := yaml.UnmarshalStrict(data, &cfg); err != nil {
				return nil, &v1alpha1.FieldError{Field: "config " + path, Message: cleanYAMLError(err)}
			}
		}
	}
	if err := cfg.Config.Validate(); err != nil {
		return nil, fmt.Errorf("config %s:\n%w", path, err)
	}
	return &cfg, nil
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
