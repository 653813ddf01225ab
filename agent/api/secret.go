package api

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"unicode/utf16"

	"walletsync/wallet"
)

// Redacted is what a Secret shows in place of its value.
const Redacted = "[redacted]"

// Secret holds a value that must never be shown, such as the unattended backup password.
// It prints, marshals and logs as "[redacted]" under every fmt verb, encoding/json,
// encoding.TextMarshaler and log/slog; only Reveal returns the value, and the only code
// that should call it hands the value to a key derivation function.
//
// The value sits behind a pointer, so that even a Secret in an unexported struct field,
// which fmt prints without calling its methods, shows as an address.
type Secret struct {
	v *string
}

// NewSecret wraps s.
func NewSecret(s string) Secret { return Secret{v: &s} }

// Reveal returns the secret value; "" for the zero Secret.
func (s Secret) Reveal() string {
	if s.v == nil {
		return ""
	}
	return *s.v
}

// IsZero reports whether s holds nothing.
func (s Secret) IsZero() bool { return s.v == nil }

// String returns "[redacted]".
func (s Secret) String() string { return Redacted }

// GoString returns "[redacted]", for %#v.
func (s Secret) GoString() string { return Redacted }

// Format writes "[redacted]" whatever the verb and flags.
func (s Secret) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, Redacted) } // fmt keeps the writer's error

// MarshalJSON returns "[redacted]" as a JSON string.
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + Redacted + `"`), nil }

// MarshalText returns "[redacted]".
func (s Secret) MarshalText() ([]byte, error) { return []byte(Redacted), nil }

// LogValue makes slog log "[redacted]".
func (s Secret) LogValue() slog.Value { return slog.StringValue(Redacted) }

// UnmarshalJSON reads a JSON string into s, so that a request body can carry a secret.
func (s *Secret) UnmarshalJSON(b []byte) error {
	var v string
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("secret: not a JSON string: %w", wallet.ErrInvalidArgument)
	}
	*s = NewSecret(v)
	return nil
}

// LostPasswordWarning is what a person is told when they set an unattended backup
// password.
const LostPasswordWarning = "walletsync keeps this password only to write scheduled backups; it cannot " +
	"recover it. If the password is lost, the backups it encrypts cannot be restored: write it down " +
	"and keep it somewhere safe."

// MinPasswordLength is the fewest characters a new backup's password may have: the one
// rule the dashboard's password fields (passwordPair in frontend/web/ui.js, kept equal by a
// test), the agent's export route and `walletsync export` all apply. Eight characters is
// the floor NIST SP 800-63B sets for a memorized secret a person chooses; the Argon2id cost
// of every BRC-39 file (t=7, m=128 MiB) does the rest against guessing.
const MinPasswordLength = 8

// CheckNewPassword returns why pw may not protect a new backup, matching
// wallet.ErrInvalidArgument, or nil. Characters are counted as the dashboard counts them
// (UTF-16 code units, a JavaScript string's length), so that a password is accepted or
// refused alike everywhere.
func CheckNewPassword(pw string) error {
	if n := len(utf16.Encode([]rune(pw))); n < MinPasswordLength {
		return fmt.Errorf("a backup password needs at least %d characters, this one has %d: %w", MinPasswordLength, n, wallet.ErrInvalidArgument)
	}
	return nil
}
