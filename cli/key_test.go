package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestCLI_KeyCreateShow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "identity.key")
	code, out, stderr := walletsync(t, "key", "create", "--out", path)
	pub := strings.TrimSpace(out)
	if code != 0 || !regexp.MustCompile(`^0[23][0-9a-f]{64}$`).MatchString(pub) {
		t.Fatalf("key create: exit %d, %q %s", code, out, stderr)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode: %v %v", st, err)
	}
	code, out, stderr = walletsync(t, "key", "show", "--key-file", path, "--json")
	var res keyResult
	if err := json.Unmarshal([]byte(out), &res); code != 0 || err != nil || res.IdentityKey != pub || res.KeyFile != path {
		t.Fatalf("key show: exit %d, %+v (%v) %s", code, res, err, stderr)
	}

	for _, tc := range []struct {
		name  string
		args  []string
		setup func() error
		code  int
		want  string
	}{
		{"CreateNeverOverwrites", []string{"key", "create", "--out", path}, nil, 1, "exists"},
		{"CreateNeedsOut", []string{"key", "create"}, nil, 2, "--out"},
		{"ShowNeedsKeyFile", []string{"key", "show"}, nil, 2, "--key-file"},
		{"ShowRefusesReadableByOthers", []string{"key", "show", "--key-file", path}, func() error { return os.Chmod(path, 0o644) }, 1, "chmod 600"},
		{"ShowRefusesMalformed", []string{"key", "show", "--key-file", path}, func() error {
			// The file exists, so WriteFile keeps its mode: the chmod puts it back to 0600.
			if err := os.WriteFile(path, []byte("not a key\n"), 0o600); err != nil {
				return err
			}
			return os.Chmod(path, 0o600)
		}, 1, "not 64 hex digits"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.setup != nil {
				if err := tc.setup(); err != nil {
					t.Fatal(err)
				}
			}
			code, out, stderr := walletsync(t, tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, want %d; stdout %q stderr %q, want %q in it", code, tc.code, out, stderr, tc.want)
			}
		})
	}
}
