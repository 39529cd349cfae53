package v1alpha1

// Sensitive is a secret string. It prints as "<redacted>" through fmt and log/slog so it
// cannot leak into logs or errors by accident; JSON keeps the value (documents need it).
type Sensitive string

// String implements fmt.Stringer.
func (Sensitive) String() string { return "<redacted>" }

// GoString implements fmt.GoStringer.
func (Sensitive) GoString() string { return `"<redacted>"` }

// Reveal returns the secret value, for the code that writes it into a Secret.
func (s Sensitive) Reveal() string { return string(s) }
