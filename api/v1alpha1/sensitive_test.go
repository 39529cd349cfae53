package v1alpha1_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
)

// TestSensitiveStaysRedacted: every way a secret can reach a log line or an error prints
// "<redacted>"; only encoding/json of a document keeps the value.
func TestSensitiveStaysRedacted(t *testing.T) {
	t.Parallel()
	const secret = "hunter2-app-credential-secret"
	s := v1alpha1.Sensitive(secret)
	var text, js bytes.Buffer
	slog.New(slog.NewTextHandler(&text, nil)).Info("x", "secret", s, "group", slog.GroupValue(slog.Any("nested", s)))
	slog.New(slog.NewJSONHandler(&js, nil)).Info("x", "secret", s, "group", slog.GroupValue(slog.Any("nested", s)))
	outputs := map[string]string{
		"fmt %v":         fmt.Sprintf("%v", s),
		"fmt.Sprint":     fmt.Sprint(s),
		"fmt %#v":        fmt.Sprintf("%#v", s),
		"fmt %+v struct": fmt.Sprintf("%+v", struct{ S v1alpha1.Sensitive }{s}),
		"error":          fmt.Errorf("bad: %v", s).Error(),
		"slog text":      text.String(),
		"slog json":      js.String(),
	}
	for name, out := range outputs {
		if strings.Contains(out, secret) {
			t.Errorf("%s leaks the secret: %s", name, out)
		}
		if !strings.Contains(out, "<redacted>") && !strings.Contains(out, `\u003credacted\u003e`) {
			t.Errorf("%s does not say <redacted>: %s", name, out)
		}
	}
	if s.Reveal() != secret {
		t.Errorf("Reveal() = %q", s.Reveal())
	}
}
