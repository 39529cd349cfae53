package generator

import (
	"fmt"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
)

// problems collects the v1alpha1.FieldErrors of one render, so that every problem of an
// input is reported at once.
type problems struct{ list v1alpha1.InputErrors }

func (p *problems) add(field, format string, args ...any) {
	p.list = append(p.list, &v1alpha1.FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
}

func (p *problems) err() error {
	if len(p.list) == 0 {
		return nil
	}
	return p.list
}
