package agent

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"time"
	"walletsync/agent/api"

	"walletsync/internal/safefile"
	"walletsync/wallet"
)

// configVersion is the config file format this binary writes. loadConfig migrates older
// files forward and refuses newer ones.
const configVersion = 1

// DefaultConfig returns the configuration of a fresh install: no wallets or destinations,
// retention 10/7/8, a weekly restore drill, info logs.
func DefaultConfig() api.Config {
	return api.Config{
		Version:      configVersion,
		Wallets:      []api.WalletRef{},
		Destinations: []api.Destination{},
		Retention:    api.Retention{Last: 10, Daily: 7, Weekly: 8},
		Drill:        api.Schedule{Kind: api.ScheduleInterval, Every: api.Duration(7 * 24 * time.Hour)},
		LogLevel:     "info",
	}
}

// defaultConfigPath returns os.UserConfigDir()/walletsync/config.json.
func defaultConfigPath() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("find the config folder: %w", err)
	}
	return filepath.Join(dir, "walletsync", "config.json"), nil
}

// configMigration turns the decoded JSON object of a version v file into a version v+1
// one. Migrations work on the object rather than on Config so that they can rename and
// reshape fields the current Config no longer has.
type configMigration func(doc map[string]any) error

// configMigrations[v] migrates version v to v+1. Append only; len(configMigrations) is
// configVersion.
var configMigrations = []configMigration{
	// 0 -> 1. Version 0 is a file without a "version" field: written by hand or by a
	// pre-release build, in version 1's shape. Fields it lacks take their defaults.
	func(doc map[string]any) error { return nil },
}

// migrateConfig brings doc, a version from file, to version len(steps).
func migrateConfig(doc map[string]any, from int, steps []configMigration) error {
	for v := from; v < len(steps); v++ {
		if err := steps[v](doc); err != nil {
			return fmt.Errorf("from version %d: %w", v, err)
		}
		doc["version"] = v + 1
	}
	return nil
}

// loadConfig reads the config file at path. A missing file yields DefaultConfig. An older
// version is migrated forward in memory (SaveConfig writes it back); fields a file leaves
// out take their defaults. It refuses a newer version (wallet.ErrSchemaTooNew), unknown
// fields and invalid values (wallet.ErrInvalidArgument), so a typo in a hand-edited file
// is reported rather than ignored.
func loadConfig(path string) (api.Config, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return DefaultConfig(), nil
	}
	if err != nil {
		return api.Config{}, fmt.Errorf("read config: %w", err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		return api.Config{}, fmt.Errorf("read config %s: %v: %w", path, err, wallet.ErrInvalidArgument)
	}
	version := 0
	if v, ok := doc["version"]; ok {
		f, isNum := v.(float64)
		if !isNum || f != float64(int(f)) || f < 0 {
			return api.Config{}, fmt.Errorf("read config %s: version %v: %w", path, v, wallet.ErrInvalidArgument)
		}
		version = int(f)
	}
	if version > configVersion {
		return api.Config{}, &wallet.SchemaError{Path: path, Err: wallet.ErrSchemaTooNew,
			Reason: fmt.Sprintf("config version %d, this walletsync knows up to %d", version, configVersion)}
	}
	if err := migrateConfig(doc, version, configMigrations); err != nil {
		return api.Config{}, fmt.Errorf("migrate config %s: %w", path, err)
	}
	if b, err = json.Marshal(doc); err != nil {
		return api.Config{}, fmt.Errorf("read config %s: %w", path, err)
	}
	c := DefaultConfig()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return api.Config{}, fmt.Errorf("read config %s: %v: %w", path, err, wallet.ErrInvalidArgument)
	}
	for i := range c.Destinations {
		if s := &c.Destinations[i].Schedule; s.Kind == "" {
			s.Kind = api.ScheduleChange
		}
		normalizeSchedule(&c.Destinations[i].Schedule)
	}
	normalizeSchedule(&c.Drill)
	if err := validateConfig(c); err != nil {
		return api.Config{}, fmt.Errorf("read config %s: %w", path, err)
	}
	return c, nil
}

// SaveConfig validates c and writes it to path atomically (a private temp file, fsync,
// rename, fsync of the folder), creating the folder (0700) if needed. The file is 0600.
func SaveConfig(path string, c api.Config) error {
	if err := validateConfig(c); err != nil {
		return fmt.Errorf("save config: %w", err)
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return fmt.Errorf("save config: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("save config: %w", err)
	}
	if err := safefile.WriteAtomic(path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("save config: %w", err)
	}
	return nil
}

// validateConfig reports the first invalid value of c, wrapping wallet.ErrInvalidArgument.
func validateConfig(c api.Config) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("config: %s: %w", fmt.Sprintf(format, args...), wallet.ErrInvalidArgument)
	}
	if c.Version != configVersion {
		return bad("version %d, want %d", c.Version, configVersion)
	}
	wallets := map[string]bool{}
	for i, w := range c.Wallets {
		if w.Path == "" || wallets[w.Path] {
			return bad("wallets[%d]: path %q is empty or repeated", i, w.Path)
		}
		wallets[w.Path] = true
		for _, id := range w.Identities {
			if b, err := hex.DecodeString(id); err != nil || len(b) != 33 {
				return bad("wallets[%d]: identity key %q is not 66 hex digits", i, id)
			}
		}
	}
	ids := map[string]bool{}
	for i, d := range c.Destinations {
		switch {
		case !validKey(d.ID) || ids[d.ID]:
			return bad("destinations[%d]: id %q is repeated or not 1-64 of a-z, 0-9, '-', '_'", i, d.ID)
		case d.Name == "":
			return bad("destination %s: no name", d.ID)
		case d.Kind != api.DestinationSQLite && d.Kind != api.DestinationFolder && d.Kind != api.DestinationBundles && d.Kind != api.DestinationStorageServer:
			return bad("destination %s: kind %q, want %q, %q, %q or %q", d.ID, d.Kind, api.DestinationSQLite, api.DestinationFolder, api.DestinationBundles, api.DestinationStorageServer)
		case d.Kind == api.DestinationStorageServer && !httpURL(d.Path):
			return bad("destination %s: a storage server's path is its http(s) URL, not %q", d.ID, d.Path)
		case d.WalletURL != "" && (d.Kind != api.DestinationStorageServer || !httpURL(d.WalletURL)):
			return bad("destination %s: walletURL %q: only a storage server takes one, an http(s) URL", d.ID, d.WalletURL)
		case d.Path == "":
			return bad("destination %s: no path", d.ID)
		case d.Wallet != "" && !wallets[d.Wallet]:
			return bad("destination %s: wallet %q is not among the wallets", d.ID, d.Wallet)
		case d.Wallet == "" && len(c.Wallets) > 1:
			return bad("destination %s: name its wallet, there are %d", d.ID, len(c.Wallets))
		case d.Kind == api.DestinationSQLite && isOwnWallet(c, d):
			return bad("destination %s: %s is the wallet it would back up; choose another file", d.ID, d.Path)
		}
		if err := validateSchedule(d.Schedule, true); err != nil {
			return bad("destination %s: %v", d.ID, err)
		}
		ids[d.ID] = true
	}
	if c.Retention.Last < 1 || c.Retention.Daily < 0 || c.Retention.Weekly < 0 {
		return bad("retention %+v: keep at least the last file, and no negative counts", c.Retention)
	}
	if err := validateSchedule(c.Drill, false); err != nil {
		return bad("drill: %v", err)
	}
	if _, err := c.LogLevel.Slog(); err != nil {
		return bad("%v", err)
	}
	if c.Addr != "" {
		if err := checkStableAddr(c.Addr); err != nil {
			return bad("addr %q: %v", c.Addr, err)
		}
	}
	return nil
}

// isOwnWallet reports a destination whose file is the wallet it backs up, under any name (a
// symbolic or hard link, another spelling of the path): a sync into it would write the
// wallet onto itself.
func isOwnWallet(c api.Config, d api.Destination) bool {
	src := d.Wallet
	if src == "" && len(c.Wallets) == 1 {
		src = c.Wallets[0].Path
	}
	return src != "" && safefile.SameFile(d.Path, src)
}

// normalizeSchedule clears the fields other kinds use and gives an on-change schedule its default
// debounce, so that a daily drill does not keep the default drill's interval.
func normalizeSchedule(s *api.Schedule) {
	switch s.Kind {
	case api.ScheduleInterval:
		s.At, s.Debounce = "", 0
	case api.ScheduleDaily:
		s.Every, s.Debounce = 0, 0
	case api.ScheduleChange:
		s.Every, s.At = 0, ""
		if s.Debounce == 0 {
			s.Debounce = api.Duration(api.DefaultDebounce)
		}
	}
}

func validateSchedule(s api.Schedule, onChange bool) error {
	switch s.Kind {
	case api.ScheduleInterval:
		if time.Duration(s.Every) < time.Minute {
			return fmt.Errorf("interval %s is under a minute", time.Duration(s.Every))
		}
	case api.ScheduleDaily:
		if t, err := time.Parse("15:04", s.At); err != nil || t.Format("15:04") != s.At {
			return fmt.Errorf("daily at %q, want HH:MM", s.At)
		}
	case api.ScheduleChange:
		if !onChange {
			return errors.New("an on-change schedule is for destinations only")
		}
		if time.Duration(s.Debounce) < time.Second {
			return fmt.Errorf("debounce %s is under a second", time.Duration(s.Debounce))
		}
	default:
		return fmt.Errorf("schedule kind %q, want %q, %q or %q", s.Kind, api.ScheduleInterval, api.ScheduleDaily, api.ScheduleChange)
	}
	return nil
}

// validKey reports whether s is 1-64 of a-z, 0-9, '-', '_': safe in a URL path, a file
// name and a log line.
// httpURL reports an http(s) URL with a host.
func httpURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

func validKey(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}
