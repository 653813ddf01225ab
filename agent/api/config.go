package api

import (
	"fmt"
	"log/slog"
	"time"
	"walletsync/wallet"
)

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
	// Addr is the dashboard's loopback address (host:port) that the agent listens on
	// unless told another: written at its first start (agent.DefaultAddr, or the port it
	// fell back to when that one was taken) so that every later start uses the same one,
	// and a dashboard left open in a browser finds the agent again. Empty until then.
	Addr string `json:"addr,omitempty"`
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
	// secrets file under "storage-key-" + ID.
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

// FoundWallet is a toolbox wallet the agent found where a wallet app keeps its wallets,
// offered on the first run. Error is set, and the rest may be empty, when the file is there
// but does not open as a wallet.
type FoundWallet struct {
	Path       string    `json:"path"`
	App        string    `json:"app"` // the wallet app whose folder holds it, e.g. "BSV Desktop"
	Identities []string  `json:"identities,omitempty"`
	Chain      string    `json:"chain,omitempty"`
	SizeBytes  int64     `json:"sizeBytes"`
	Modified   time.Time `json:"modified"`
	Error      string    `json:"error,omitempty"`
}
