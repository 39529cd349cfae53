package generator

import "fmt"

// Site is a site's configuration that Validate accepted. Render takes only a Site, so a
// configuration is checked once, where it is loaded (internal/config.Load, or NewSite
// where a caller builds one), and never again on the way of an event. It is a copy of the
// Config it was made from; its fields must not be changed afterwards.
type Site struct {
	Config
}

// NewSite validates cfg and returns it as a Site; the error names each offending option.
func NewSite(cfg Config) (*Site, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Site{Config: cfg}, nil
}

// MustSite is NewSite for a configuration known to be valid (tests, the embedded demo): it
// panics on an invalid one.
func MustSite(cfg Config) *Site {
	s, err := NewSite(cfg)
	if err != nil {
		panic(fmt.Sprintf("generator: invalid configuration: %v", err))
	}
	return s
}
