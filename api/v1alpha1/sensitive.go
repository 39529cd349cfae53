package v1alpha1

import "log/slog"

// Sensitive is a secret string. It prints as "<redacted>" through fmt and log/slog so it
// cannot leak into logs or errors by accident; JSON keeps the value (documents need it).
type Sensitive string

// LogValue implements slog.LogValuer: slog's JSON handler marshals other values with
// encoding/json, which would write the secret itself.
func (Sensitive) LogValue() slog.Value { return slog.StringValue("<redacted>") }

// String implements fmt.Stringer.
func (Sensitive) String() string { return "<redacted>" }

// GoString implements fmt.GoStringer.
func (Sensitive) GoString() string { return `"<redacted>"` }

// Reveal returns the secret value, for the code that writes it into a Secret.
func (s Sensitive) Reveal() string { return string(s) }
