package agent

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"walletsync/agent/api"

	"walletsync/internal/safefile"
	"walletsync/wallet"
)

// minSecretLength is the shortest secret Secrets accepts, in bytes. Besides being a floor
// for a password, it keeps redaction meaningful: scrubbing a 2-letter value would mangle
// every text it passes.
const minSecretLength = 8

// Secrets is the secrets file in the data folder: named secrets (such as a destination's
// backup password), stored 0600, never in the config. Get is the only way anything reads
// a secret back. A file that others can read is refused rather than used.
//
// Secrets is also a redactor: Redact scrubs every value it has held during this process,
// including replaced and deleted ones, which a job may still carry.
type Secrets struct {
	path string

	mu       sync.Mutex
	values   map[string]string // nil until loaded
	seen     map[string]bool   // every value held since the process started
	replacer *strings.Replacer // scrubs the seen values, longest first
}

// NewSecrets returns the secrets file at path; it is read on first use.
func NewSecrets(path string) *Secrets {
	return &Secrets{path: path, seen: map[string]bool{}}
}

// secretsFile is the file's JSON form.
type secretsFile struct {
	Version int               `json:"version"`
	Secrets map[string]string `json:"secrets"`
}

func (s *Secrets) loadLocked() error {
	if s.values != nil {
		return nil
	}
	f := secretsFile{Secrets: map[string]string{}}
	info, err := os.Stat(s.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("read secrets: %w", err)
	case openToOthers(info):
		return api.WithHint(fmt.Errorf("read secrets: %s (mode %#o): %w", s.path, info.Mode().Perm(), api.ErrOpenToOthers),
			"Run chmod 600 on the file, then change the backup password: others may have read it.")
	default:
		b, err := os.ReadFile(s.path)
		if err != nil {
			return fmt.Errorf("read secrets: %w", err)
		}
		if err := json.Unmarshal(b, &f); err != nil || f.Version != 1 {
			return fmt.Errorf("read secrets %s: not a version 1 secrets file: %w", s.path, wallet.ErrCorrupt)
		}
	}
	s.values = f.Secrets
	if s.values == nil {
		s.values = map[string]string{}
	}
	s.remember(slices.Collect(maps.Values(s.values))...)
	return nil
}

// remember adds values to the redaction set.
func (s *Secrets) remember(values ...string) {
	for _, v := range values {
		s.seen[v] = true
	}
	all := slices.SortedFunc(maps.Keys(s.seen), func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	pairs := make([]string, 0, 2*len(all))
	for _, v := range all {
		pairs = append(pairs, v, api.Redacted)
	}
	s.replacer = strings.NewReplacer(pairs...)
}

func (s *Secrets) saveLocked() error {
	b, err := json.MarshalIndent(secretsFile{Version: 1, Secrets: s.values}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(s.path), 0o700); err != nil {
		return err
	}
	return safefile.WriteAtomic(s.path, b, 0o600)
}

// Set stores value under key, replacing any value it had. key is 1-64 of a-z, 0-9, '-',
// '_' (a destination id, say); value is at least minSecretLength bytes. Both are refused
// otherwise with wallet.ErrInvalidArgument. Tell the person LostPasswordWarning.
func (s *Secrets) Set(key string, value api.Secret) error {
	if !validKey(key) {
		return fmt.Errorf("set secret %q: key is not 1-64 of a-z, 0-9, '-', '_': %w", key, wallet.ErrInvalidArgument)
	}
	if len(value.Reveal()) < minSecretLength {
		return fmt.Errorf("set secret %s: shorter than %d bytes: %w", key, minSecretLength, wallet.ErrInvalidArgument)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.loadLocked(); err != nil {
		return err
	}
	old, had := s.values[key]
	s.values[key] = value.Reveal()
	s.remember(value.Reveal())
	if err := s.saveLocked(); err != nil {
		if had {
			s.values[key] = old
		} else {
			delete(s.values, key)
		}
		return fmt.Errorf("set secret %s: %w", key, err)
	}
	return nil
}

// Get returns the secret stored under key, or an error wrapping wallet.ErrNotFound.
func (s *Secrets) Get(key string) (api.Secret, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.loadLocked(); err != nil {
		return api.Secret{}, err
	}
	v, ok := s.values[key]
	if !ok {
		return api.Secret{}, fmt.Errorf("secret %q: %w", key, wallet.ErrNotFound)
	}
	return api.NewSecret(v), nil
}

// Delete removes the secret stored under key; a missing key is not an error.
func (s *Secrets) Delete(key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.loadLocked(); err != nil {
		return err
	}
	old, ok := s.values[key]
	if !ok {
		return nil
	}
	delete(s.values, key)
	if err := s.saveLocked(); err != nil {
		s.values[key] = old
		return fmt.Errorf("delete secret %s: %w", key, err)
	}
	return nil
}

// Keys returns the keys that hold a secret, sorted. It never returns a value.
func (s *Secrets) Keys() ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.loadLocked(); err != nil {
		return nil, err
	}
	return slices.Sorted(maps.Keys(s.values)), nil
}

// Redact returns text with every secret value this process has held replaced by
// "[redacted]". It loads the file if needed; if it cannot, no job can have read a secret
// from it either, and text is returned as it is.
func (s *Secrets) Redact(text string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = s.loadLocked() // unreadable: no job can have read a secret from it (see above)
	if s.replacer == nil {
		return text
	}
	return s.replacer.Replace(text)
}
