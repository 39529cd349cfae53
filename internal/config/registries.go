package config

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/generator"
)

// loadRegistryFiles reads the files the registries section names — trusted CA PEM files
// and registry passwords — into the configuration, since the generator does no I/O.
// Load has already made relative paths relative to the configuration file
// (resolveConfigPaths). Errors name the option, never the content.
func loadRegistryFiles(c *generator.RegistriesConfig) error {
	read := func(field, p string) (string, error) {
		b, err := os.ReadFile(p)
		if err != nil {
			return "", &v1alpha1.FieldError{Field: field, Message: fmt.Sprintf("cannot read %s: %v", p, errorsOnly(err))}
		}
		return string(b), nil
	}
	for name, p := range c.TrustedCAFiles {
		pem, err := read("registries.trusted_ca_files."+name, p)
		if err != nil {
			return err
		}
		if c.TrustedCAs == nil {
			c.TrustedCAs = map[string]string{}
		}
		c.TrustedCAs[name] = pem
	}
	for reg, a := range c.Auth {
		field := "registries.auth." + reg + ".password_file"
		if a.PasswordFile == "" {
			return &v1alpha1.FieldError{Field: field, Message: "required: registry passwords come from files, never inline"}
		}
		pw, err := read(field, a.PasswordFile)
		if err != nil {
			return err
		}
		// A trailing newline is the editor's, not the password's.
		a.Password = v1alpha1.Sensitive(strings.TrimRight(pw, "\r\n"))
		c.Auth[reg] = a
	}
	return nil
}

// errorsOnly keeps an I/O error's reason without repeating the path.
func errorsOnly(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
