package agent

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"walletsync/agent/api"

	"walletsync/wallet"
)

func TestSecret_NeverShowsItsValue(t *testing.T) {
	const value = "hunter2-hunter2-hunter2"
	s := api.NewSecret(value)
	type args struct {
		Name     string
		Password api.Secret
		hidden   api.Secret
		Ptr      *api.Secret
	}
	a := args{"x", s, s, &s}
	logged := func(h func(*bytes.Buffer) slog.Handler) string {
		var b bytes.Buffer
		slog.New(h(&b)).Info("msg", "pw", s, "args", a, "err", fmt.Errorf("open: %v", s))
		return b.String()
	}
	type doc struct{ P api.Secret }
	xmlOut, err := xml.Marshal(doc{s})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, text string }{
		{"fmt verbs", fmt.Sprintf("%v %+v %#v %s %q %x %X %d %T %10.3s", s, s, s, s, s, s, s, s, s, s)},
		{"fmt of structs", fmt.Sprintf("%v %+v %#v", a, a, a)},
		{"fmt of a pointer", fmt.Sprintf("%v %+v", &s, &a)},
		{"Sprint and an error", fmt.Sprint(s) + fmt.Errorf("decrypt with %v", s).Error()},
		{"json", string(must(json.Marshal(a)))},
		{"xml", string(xmlOut)},
		{"slog text", logged(func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) })},
		{"slog json", logged(func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assertNoSecret(t, tc.text, value)
			if !strings.Contains(tc.text, api.Redacted) {
				t.Fatalf("no %s in %q", api.Redacted, tc.text)
			}
		})
	}
	if s.Reveal() != value || (api.Secret{}).Reveal() != "" || !(api.Secret{}).IsZero() || s.IsZero() {
		t.Fatal("Reveal or IsZero wrong")
	}
	var back struct{ P api.Secret }
	if err := json.Unmarshal([]byte(`{"P":"from a request"}`), &back); err != nil || back.P.Reveal() != "from a request" {
		t.Fatalf("UnmarshalJSON: %v, %q", err, back.P.Reveal())
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

func TestSecrets_SetGetDelete(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data", "secrets.json")
	s := NewSecrets(path)
	if _, err := s.Get("backup"); !errors.Is(err, wallet.ErrNotFound) {
		t.Fatalf("Get before Set = %v, want ErrNotFound", err)
	}
	for _, v := range []string{"first-password", "second-password"} {
		if err := s.Set("backup", api.NewSecret(v)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Set("nas-folder", api.NewSecret("third-password")); err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" {
		if info, _ := os.Stat(path); info.Mode().Perm() != 0o600 {
			t.Fatalf("secrets file mode %v, want 0600", info.Mode())
		}
	}
	reopened := NewSecrets(path) // as the next run of the agent
	if got, err := reopened.Get("backup"); err != nil || got.Reveal() != "second-password" {
		t.Fatalf("Get after reopening = %q, %v", got.Reveal(), err)
	}
	if keys, err := reopened.Keys(); err != nil || !slices.Equal(keys, []string{"backup", "nas-folder"}) {
		t.Fatalf("Keys = %v, %v", keys, err)
	}
	for range 2 { // deleting twice is fine
		if err := reopened.Delete("backup"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := NewSecrets(path).Get("backup"); !errors.Is(err, wallet.ErrNotFound) {
		t.Fatalf("Get after Delete = %v", err)
	}
}

func TestSecrets_Refuses(t *testing.T) {
	s := NewSecrets(filepath.Join(t.TempDir(), "secrets.json"))
	for _, tc := range []struct{ key, value string }{
		{"backup", "7-bytes"},
		{"", "long-enough-password"},
		{"Backup Key", "long-enough-password"},
		{"../etc", "long-enough-password"},
	} {
		err := s.Set(tc.key, api.NewSecret(tc.value))
		if !errors.Is(err, wallet.ErrInvalidArgument) {
			t.Errorf("Set(%q, %q) = %v, want ErrInvalidArgument", tc.key, tc.value, err)
		}
		if err != nil && strings.Contains(err.Error(), tc.value) {
			t.Errorf("the refusal repeats the value: %v", err)
		}
	}
	if runtime.GOOS == "windows" {
		return
	}
	path := filepath.Join(t.TempDir(), "secrets.json")
	if err := os.WriteFile(path, []byte(`{"version":1,"secrets":{"backup":"long-enough-password"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := NewSecrets(path).Get("backup")
	if hint := api.HintFor(err); err == nil || !strings.Contains(hint, "chmod 600") {
		t.Fatalf("a file others can read: %v (hint %q), want a refusal with a chmod hint", err, hint)
	}
}

func TestSecrets_RedactsEveryValueHeld(t *testing.T) {
	s := NewSecrets(filepath.Join(t.TempDir(), "secrets.json"))
	if got := s.Redact("nothing stored yet"); got != "nothing stored yet" {
		t.Fatalf("Redact = %q", got)
	}
	for _, v := range []string{"old-password", "old-password-2"} { // one value a prefix of the other
		if err := s.Set("backup", api.NewSecret(v)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Delete("backup"); err != nil {
		t.Fatal(err)
	}
	got := s.Redact("a job still holds old-password-2 and old-password.")
	if want := "a job still holds [redacted] and [redacted]."; got != want {
		t.Fatalf("Redact = %q, want %q", got, want)
	}
}
