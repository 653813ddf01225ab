package agent

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
	"walletsync/agent/api"

	"walletsync/wallet"
)

const identity = "0269f6b35e38c9dbeeca889c4fbeb7ed95e69a7340600eec94e85d1251c074a395"

// validConfig is a config that passes Validate, for cases to break one field of.
func validConfig() api.Config {
	c := DefaultConfig()
	c.Wallets = []api.WalletRef{{Path: "/w/wallet.sqlite", Identities: []string{identity}}}
	c.Destinations = []api.Destination{
		{ID: "usb-copy", Name: "USB copy", Kind: api.DestinationSQLite, Path: "/media/usb/backup.sqlite",
			Schedule: api.Schedule{Kind: api.ScheduleChange, Debounce: api.Duration(api.DefaultDebounce)}},
		{ID: "cloud", Name: "Cloud folder", Kind: api.DestinationFolder, Path: "/home/a/Cloud/walletsync",
			Schedule: api.Schedule{Kind: api.ScheduleDaily, At: "02:30"}, Pause: &api.Pause{Until: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)}},
	}
	return c
}

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadConfig_MissingFileGivesDefaults(t *testing.T) {
	c, err := loadConfig(filepath.Join(t.TempDir(), "none.json"))
	if err != nil || !reflect.DeepEqual(c, DefaultConfig()) {
		t.Fatalf("LoadConfig = %+v, %v; want the defaults", c, err)
	}
	if d := DefaultConfig(); d.Retention != (api.Retention{Last: 10, Daily: 7, Weekly: 8}) || time.Duration(d.Drill.Every) != 7*24*time.Hour {
		t.Fatalf("defaults: %+v", d)
	}
}

// An unversioned (version 0) file is migrated to version 1; what it leaves out takes the
// defaults; saving writes version 1 and reads back the same.
func TestLoadConfig_MigratesUnversioned(t *testing.T) {
	path := writeConfig(t, `{
		"wallets": [{"path": "/w/wallet.sqlite"}],
		"destinations": [
			{"id": "usb", "name": "USB", "kind": "sqlite", "path": "/media/usb/b.sqlite"},
			{"id": "nas", "name": "NAS", "kind": "folder", "path": "/nas", "schedule": {"kind": "change"}}
		],
		"retention": {"last": 5},
		"drill": {"kind": "daily", "at": "04:00"}
	}`)
	c, err := loadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	onChange := api.Schedule{Kind: api.ScheduleChange, Debounce: api.Duration(30 * time.Second)}
	if c.Version != configVersion || c.Destinations[0].Schedule != onChange || c.Destinations[1].Schedule != onChange ||
		c.Retention != (api.Retention{Last: 5, Daily: 7, Weekly: 8}) || c.Drill != (api.Schedule{Kind: api.ScheduleDaily, At: "04:00"}) || c.LogLevel != "info" {
		t.Fatalf("migrated config: %+v", c)
	}
	if err := SaveConfig(path, c); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), `"version": 1`) || !strings.Contains(string(b), `"debounce": "30s"`) {
		t.Fatalf("saved file:\n%s", b)
	}
	if back, err := loadConfig(path); err != nil || !reflect.DeepEqual(back, c) {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
}

// migrateConfig runs every step from the file's version on, in order, numbering each.
func TestMigrateConfig_RunsStepsInOrder(t *testing.T) {
	steps := []configMigration{
		func(doc map[string]any) error { doc["trace"] = "0"; return nil },
		func(doc map[string]any) error { // 1 -> 2 renames a field
			doc["keep"], doc["retention"] = doc["retention"], nil
			doc["trace"] = doc["trace"].(string) + "1"
			return nil
		},
		func(doc map[string]any) error { doc["trace"] = doc["trace"].(string) + "2"; return nil },
	}
	doc := map[string]any{"retention": 5.0}
	if err := migrateConfig(doc, 0, steps); err != nil {
		t.Fatal(err)
	}
	if doc["version"] != 3 || doc["trace"] != "012" || doc["keep"] != 5.0 {
		t.Fatalf("migrated: %v", doc)
	}
	doc = map[string]any{"version": 2.0, "trace": "x"}
	if err := migrateConfig(doc, 2, steps); err != nil || doc["trace"] != "x2" || doc["version"] != 3 {
		t.Fatalf("from version 2: %v, %v", doc, err)
	}
	failing := []configMigration{func(map[string]any) error { return errors.New("boom") }}
	if err := migrateConfig(map[string]any{}, 0, failing); err == nil || !strings.Contains(err.Error(), "from version 0: boom") {
		t.Fatalf("failing step: %v", err)
	}
}

func TestLoadConfig_Refuses(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       error
	}{
		{"a newer version", `{"version": 2}`, wallet.ErrSchemaTooNew},
		{"a version that is not a count", `{"version": "1"}`, wallet.ErrInvalidArgument},
		{"an unknown field", `{"version": 1, "retension": {"last": 3}}`, wallet.ErrInvalidArgument},
		{"not JSON", `{"version": 1`, wallet.ErrInvalidArgument},
		{"an invalid value", `{"version": 1, "logLevel": "loud"}`, wallet.ErrInvalidArgument},
		{"a bad duration", `{"version": 1, "drill": {"kind": "interval", "every": "weekly"}}`, wallet.ErrInvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := loadConfig(writeConfig(t, tc.text)); !errors.Is(err, tc.want) {
				t.Fatalf("LoadConfig = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestConfig_ValidateRefusals(t *testing.T) {
	if err := validateConfig(validConfig()); err != nil {
		t.Fatalf("valid config refused: %v", err)
	}
	for _, tc := range []struct {
		name  string
		spoil func(c *api.Config)
	}{
		{"version", func(c *api.Config) { c.Version = 0 }},
		{"repeated wallet", func(c *api.Config) { c.Wallets = append(c.Wallets, c.Wallets[0]) }},
		{"short identity", func(c *api.Config) { c.Wallets[0].Identities = []string{"02ab"} }},
		{"repeated destination id", func(c *api.Config) { c.Destinations[1].ID = c.Destinations[0].ID }},
		{"id with a slash", func(c *api.Config) { c.Destinations[0].ID = "a/b" }},
		{"no name", func(c *api.Config) { c.Destinations[0].Name = "" }},
		{"unknown kind", func(c *api.Config) { c.Destinations[0].Kind = "s3" }},
		{"no path", func(c *api.Config) { c.Destinations[0].Path = "" }},
		{"unknown wallet", func(c *api.Config) { c.Destinations[0].Wallet = "/other.sqlite" }},
		{"wallet unnamed among two", func(c *api.Config) { c.Wallets = append(c.Wallets, api.WalletRef{Path: "/w2.sqlite"}) }},
		{"interval under a minute", func(c *api.Config) {
			c.Destinations[0].Schedule = api.Schedule{Kind: api.ScheduleInterval, Every: api.Duration(time.Second)}
		}},
		{"daily at 24:00", func(c *api.Config) { c.Destinations[1].Schedule.At = "24:00" }},
		{"daily at 2:30", func(c *api.Config) { c.Destinations[1].Schedule.At = "2:30" }},
		{"debounce under a second", func(c *api.Config) { c.Destinations[0].Schedule.Debounce = api.Duration(time.Millisecond) }},
		{"no schedule kind", func(c *api.Config) { c.Destinations[0].Schedule = api.Schedule{} }},
		{"keep no last file", func(c *api.Config) { c.Retention.Last = 0 }},
		{"negative weekly", func(c *api.Config) { c.Retention.Weekly = -1 }},
		{"drill on change", func(c *api.Config) {
			c.Drill = api.Schedule{Kind: api.ScheduleChange, Debounce: api.Duration(time.Minute)}
		}},
		{"log level", func(c *api.Config) { c.LogLevel = "chatty" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := validConfig()
			tc.spoil(&c)
			if err := validateConfig(c); !errors.Is(err, wallet.ErrInvalidArgument) {
				t.Fatalf("Validate = %v, want ErrInvalidArgument", err)
			}
		})
	}
}

func TestSaveConfig_Atomic(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "walletsync")
	path := filepath.Join(dir, "config.json")
	c := validConfig()
	if err := SaveConfig(path, c); err != nil {
		t.Fatal(err)
	}
	c.LogLevel = "debug"
	if err := SaveConfig(path, c); err != nil { // replaces the file
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	bad := c
	bad.Retention.Last = 0
	if err := SaveConfig(path, bad); !errors.Is(err, wallet.ErrInvalidArgument) {
		t.Fatalf("SaveConfig(invalid) = %v", err)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Fatal("an invalid config was written")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("folder holds %d entries, want only config.json (no temp files)", len(entries))
	}
	if runtime.GOOS != "windows" {
		fi, _ := os.Stat(path)
		di, _ := os.Stat(dir)
		if fi.Mode().Perm() != 0o600 || di.Mode().Perm() != 0o700 {
			t.Fatalf("modes: file %v, folder %v", fi.Mode(), di.Mode())
		}
	}
	if back, err := loadConfig(path); err != nil || !reflect.DeepEqual(back, c) {
		t.Fatalf("LoadConfig = %+v, %v; want %+v", back, err, c)
	}
}

func TestDestination_Paused(t *testing.T) {
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		pause *api.Pause
		want  bool
	}{
		{nil, false},
		{&api.Pause{}, true}, // until resumed
		{&api.Pause{Until: now.Add(time.Hour)}, true},
		{&api.Pause{Until: now}, false}, // resumes by itself
	} {
		if got := (api.Destination{Pause: tc.pause}).Paused(now); got != tc.want {
			t.Errorf("Paused with %+v = %v, want %v", tc.pause, got, tc.want)
		}
	}
}
