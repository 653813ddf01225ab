package agent

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"walletsync/internal/safefile"
	"walletsync/wallet"
)

// ConfigVersion is the config file format this binary writes. LoadConfig migrates older
// files forward and refuses newer ones.
const ConfigVersion = 1

// Config is the agent's configuration: what to keep safe, where, and when. It holds no
// secret: the unattended backup password lives in the secrets file (see Secrets).
type Config struct {
	Version      int           `json:"version"`
	Wallets      []WalletRef   `json:"wallets"`
	Destinations []Destination `json:"destinations"`
	Retention    Retention     `json:"retention"`
	// Drill is when the restore drill runs (interval or daily; default every 7 days).
	Drill    Schedule `json:"drill"`
	LogLevel LogLevel `json:"logLevel"`
}

// WalletRef is a wallet file and the identities in it that the agent keeps safe.
type WalletRef struct {
	Path string `json:"path"`
	// Identities are the identity keys (66 hex digits) to back up; empty means every
	// identity in the file.
	Identities []string `json:"identities,omitempty"`
}

// DestinationKind says what a destination is. The strings are a wire format.
type DestinationKind string

// Destination kinds.
const (
	DestinationSQLite DestinationKind = "sqlite" // a backup wallet file, kept in sync page by page
	DestinationFolder DestinationKind = "folder" // a folder of encrypted BRC-39 backup files
	// DestinationBundles is a folder of whole-store bundles (package bundle): every identity,
	// the settings and sync states, as one verifiable snapshot of the wallet file.
	DestinationBundles DestinationKind = "bundles"
	// DestinationStorageServer is a @bsv/wallet-toolbox storage server (Path is its URL),
	// kept in sync with BRC-40 chunks as the wallet's identity.
	DestinationStorageServer DestinationKind = "storage-server"
)

// Destination is one place a wallet is kept safe.
type Destination struct {
	ID   string          `json:"id"` // 1-64 of a-z, 0-9, '-', '_'; stable, names tasks and secrets
	Name string          `json:"name"`
	Kind DestinationKind `json:"kind"`
	Path string          `json:"path"` // the backup wallet file or the backup folder
	// Wallet is the Path of the WalletRef it backs up; empty when there is only one.
	Wallet string `json:"wallet,omitempty"`
	// WalletURL, for a storage server, is the BRC-100 wallet that signs as the identity
	// (e.g. http://127.0.0.1:3321); when empty the identity's private key signs, kept in the
	// secrets file under StorageKeySecret(ID).
	WalletURL string `json:"walletURL,omitempty"`
	// Schedule is when the destination is brought up to date; a file that leaves it out
	// gets on change, with the default debounce.
	Schedule Schedule `json:"schedule"`
	// Pause, when set, holds scheduled runs back (a run asked for by hand still runs).
	Pause *Pause `json:"pause,omitempty"`
}

// Paused reports whether d's scheduled runs are held back at now.
func (d Destination) Paused(now time.Time) bool {
	return d.Pause != nil && (d.Pause.Until.IsZero() || now.Before(d.Pause.Until))
}

// Pause holds a destination's scheduled runs back until Until, or until resumed when
// Until is zero.
type Pause struct {
	Until time.Time `json:"until,omitzero"`
}

// ScheduleKind says when a schedule fires. The strings are a wire format.
type ScheduleKind string

// Schedule kinds.
const (
	ScheduleInterval ScheduleKind = "interval" // every Every
	ScheduleDaily    ScheduleKind = "daily"    // every day at At, local time
	ScheduleChange   ScheduleKind = "change"   // when the wallet changes, Debounce after the last write
)

// DefaultDebounce is how long an on-change schedule waits after the wallet's last write.
const DefaultDebounce = 30 * time.Second

// Schedule is when a destination is brought up to date, or when the drill runs.
type Schedule struct {
	Kind     ScheduleKind `json:"kind"`
	Every    Duration     `json:"every,omitzero"`    // interval: at least a minute
	At       string       `json:"at,omitempty"`      // daily: "HH:MM", 24-hour, local time
	Debounce Duration     `json:"debounce,omitzero"` // change: at least a second (default 30 s)
}

// Retention is which backup files a folder destination keeps: the newest Last, plus the
// newest of each of the last Daily days and of the last Weekly weeks. The newest verified
// file is never deleted, whatever these say.
type Retention struct {
	Last   int `json:"last"`   // at least 1
	Daily  int `json:"daily"`  // 0 keeps none by day
	Weekly int `json:"weekly"` // 0 keeps none by week
}

// LogLevel is how much the agent logs: "debug", "info", "warn" or "error".
type LogLevel string

// Slog returns the slog level of l; "" is info.
func (l LogLevel) Slog() (slog.Level, error) {
	var v slog.Level
	if l == "" {
		return slog.LevelInfo, nil
	}
	if err := v.UnmarshalText([]byte(l)); err != nil {
		return 0, fmt.Errorf("log level %q: %w", l, wallet.ErrInvalidArgument)
	}
	return v, nil
}

// Duration is a time.Duration written as text ("30s", "1h30m") in the config file.
type Duration time.Duration

// MarshalText writes d as time.Duration.String does.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText reads a duration as time.ParseDuration does.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("duration %q: %w", b, wallet.ErrInvalidArgument)
	}
	*d = Duration(v)
	return nil
}

// DefaultConfig returns the configuration of a fresh install: no wallets or destinations,
// retention 10/7/8, a weekly restore drill, info logs.
func DefaultConfig() Config {
	return Config{
		Version:      ConfigVersion,
		Wallets:      []WalletRef{},
		Destinations: []Destination{},
		Retention:    Retention{Last: 10, Daily: 7, Weekly: 8},
		Drill:        Schedule{Kind: ScheduleInterval, Every: Duration(7 * 24 * time.Hour)},
		LogLevel:     "info",
	}
}

// DefaultConfigPath returns os.UserConfigDir()/walletsync/config.json.
func DefaultConfigPath() (string, error) {
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
// ConfigVersion.
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

// LoadConfig reads the config file at path. A missing file yields DefaultConfig. An older
// version is migrated forward in memory (SaveConfig writes it back); fields a file leaves
// out take their defaults. It refuses a newer version (wallet.ErrSchemaTooNew), unknown
// fields and invalid values (wallet.ErrInvalidArgument), so a typo in a hand-edited file
// is reported rather than ignored.
func LoadConfig(path string) (Config, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return DefaultConfig(), nil
	}
	if err != nil {
		return Config{}, fmt.Errorf("read config: %w", err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		return Config{}, fmt.Errorf("read config %s: %v: %w", path, err, wallet.ErrInvalidArgument)
	}
	version := 0
	if v, ok := doc["version"]; ok {
		f, isNum := v.(float64)
		if !isNum || f != float64(int(f)) || f < 0 {
			return Config{}, fmt.Errorf("read config %s: version %v: %w", path, v, wallet.ErrInvalidArgument)
		}
		version = int(f)
	}
	if version > ConfigVersion {
		return Config{}, &wallet.SchemaError{Path: path, Err: wallet.ErrSchemaTooNew,
			Reason: fmt.Sprintf("config version %d, this walletsync knows up to %d", version, ConfigVersion)}
	}
	if err := migrateConfig(doc, version, configMigrations); err != nil {
		return Config{}, fmt.Errorf("migrate config %s: %w", path, err)
	}
	if b, err = json.Marshal(doc); err != nil {
		return Config{}, fmt.Errorf("read config %s: %w", path, err)
	}
	c := DefaultConfig()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return Config{}, fmt.Errorf("read config %s: %v: %w", path, err, wallet.ErrInvalidArgument)
	}
	for i := range c.Destinations {
		if s := &c.Destinations[i].Schedule; s.Kind == "" {
			s.Kind = ScheduleChange
		}
		normalizeSchedule(&c.Destinations[i].Schedule)
	}
	normalizeSchedule(&c.Drill)
	if err := validateConfig(c); err != nil {
		return Config{}, fmt.Errorf("read config %s: %w", path, err)
	}
	return c, nil
}

// SaveConfig validates c and writes it to path atomically (a private temp file, fsync,
// rename, fsync of the folder), creating the folder (0700) if needed. The file is 0600.
func SaveConfig(path string, c Config) error {
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
func validateConfig(c Config) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("config: %s: %w", fmt.Sprintf(format, args...), wallet.ErrInvalidArgument)
	}
	if c.Version != ConfigVersion {
		return bad("version %d, want %d", c.Version, ConfigVersion)
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
		case d.Kind != DestinationSQLite && d.Kind != DestinationFolder && d.Kind != DestinationBundles && d.Kind != DestinationStorageServer:
			return bad("destination %s: kind %q, want %q, %q, %q or %q", d.ID, d.Kind, DestinationSQLite, DestinationFolder, DestinationBundles, DestinationStorageServer)
		case d.Kind == DestinationStorageServer && !httpURL(d.Path):
			return bad("destination %s: a storage server's path is its http(s) URL, not %q", d.ID, d.Path)
		case d.WalletURL != "" && (d.Kind != DestinationStorageServer || !httpURL(d.WalletURL)):
			return bad("destination %s: walletURL %q: only a storage server takes one, an http(s) URL", d.ID, d.WalletURL)
		case d.Path == "":
			return bad("destination %s: no path", d.ID)
		case d.Wallet != "" && !wallets[d.Wallet]:
			return bad("destination %s: wallet %q is not among the wallets", d.ID, d.Wallet)
		case d.Wallet == "" && len(c.Wallets) > 1:
			return bad("destination %s: name its wallet, there are %d", d.ID, len(c.Wallets))
		case d.Kind == DestinationSQLite && isOwnWallet(c, d):
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
	return nil
}

// isOwnWallet reports a destination whose file is the wallet it backs up, under any name (a
// symbolic or hard link, another spelling of the path): a sync into it would write the
// wallet onto itself.
func isOwnWallet(c Config, d Destination) bool {
	src := d.Wallet
	if src == "" && len(c.Wallets) == 1 {
		src = c.Wallets[0].Path
	}
	return src != "" && safefile.SameFile(d.Path, src)
}

// normalizeSchedule clears the fields other kinds use and gives an on-change schedule its default
// debounce, so that a daily drill does not keep the default drill's interval.
func normalizeSchedule(s *Schedule) {
	switch s.Kind {
	case ScheduleInterval:
		s.At, s.Debounce = "", 0
	case ScheduleDaily:
		s.Every, s.Debounce = 0, 0
	case ScheduleChange:
		s.Every, s.At = 0, ""
		if s.Debounce == 0 {
			s.Debounce = Duration(DefaultDebounce)
		}
	}
}

func validateSchedule(s Schedule, onChange bool) error {
	switch s.Kind {
	case ScheduleInterval:
		if time.Duration(s.Every) < time.Minute {
			return fmt.Errorf("interval %s is under a minute", time.Duration(s.Every))
		}
	case ScheduleDaily:
		if t, err := time.Parse("15:04", s.At); err != nil || t.Format("15:04") != s.At {
			return fmt.Errorf("daily at %q, want HH:MM", s.At)
		}
	case ScheduleChange:
		if !onChange {
			return errors.New("an on-change schedule is for destinations only")
		}
		if time.Duration(s.Debounce) < time.Second {
			return fmt.Errorf("debounce %s is under a second", time.Duration(s.Debounce))
		}
	default:
		return fmt.Errorf("schedule kind %q, want %q, %q or %q", s.Kind, ScheduleInterval, ScheduleDaily, ScheduleChange)
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
