package api

import (
	"time"
	"walletsync/bundle"
	"walletsync/remote"
	"walletsync/syncer"
	"walletsync/wallet"
)

// BackupListing is the body of GET /api/v1/destinations/{id}/backups: the folder's backup
// files, newest first, each with what the agent recorded about it and what retention does
// with it.
type BackupListing struct {
	Destination string         `json:"destination"`
	Files       []BackupListed `json:"files"`
	Retention   Retention      `json:"retention"`
}

// BackupListed is one backup file of a folder.
type BackupListed struct {
	Name string `json:"name"`
	// Record is what the agent knows of a file it wrote (nil for a file it did not write).
	Record *BackupRecord `json:"record,omitempty"`
	// Keep and Reasons are retention's decision as of now.
	Keep    bool     `json:"keep"`
	Reasons []string `json:"reasons,omitempty"`
}

// BundleRestored is the result of a bundle restore task: the bundle's manifest and the rows
// of every table of the wallet as it reopened after the restore.
type BundleRestored struct {
	Bundle   string           `json:"bundle"`
	Wallet   string           `json:"wallet"`
	Manifest bundle.Manifest  `json:"manifest"`
	Tables   map[string]int64 `json:"tables"`
}

// WalletCensus is what a configured wallet holds now, for a bundle restore's preview to say
// what replacing it would lose: its identities and the rows of every table in the file
// (the toolbox's, walletsync's and Knex's), read in one transaction.
type WalletCensus struct {
	Wallet     string           `json:"wallet"`
	Identities []string         `json:"identities"`
	Tables     map[string]int64 `json:"tables"`
}

// DrillResult is what a restore drill found, one file per backup folder.
type DrillResult struct {
	Files []DrillFile `json:"files"`
	// Skipped says why the drill checked nothing (no backup folder has a backup yet): the
	// task succeeds, yet proves nothing, and the dashboard says "skipped", not "done".
	Skipped string `json:"skipped,omitempty"`
	// PasswordProven is when the person last typed the unattended backup password into
	// "test my password" and it opened the newest backup file; zero when never, or when the
	// password has changed since. A drill proves the stored password; this says whether
	// the person still knows it.
	PasswordProven time.Time `json:"passwordProven,omitzero"`
}

// PasswordTest is the answer of "test my password" (RoutePasswordTest): whether the typed
// password opens the newest backup file. Nothing is written anywhere but the agent's note
// of when the password was proven.
type PasswordTest struct {
	// Opens says whether the password decrypted the file (its whole tag checked).
	Opens bool `json:"opens"`
	// File is the backup file tried, and Destination the folder destination it is in.
	File        string `json:"file"`
	Destination string `json:"destination"`
	// Unattended says whether the typed password is also the one the agent writes new
	// backups with (only when it opens the file): if not, newer backups need the other one.
	Unattended bool `json:"unattended"`
	// Message says the outcome in plain words.
	Message string `json:"message"`
	// Proven is when the unattended password was last proven this way, zero if never.
	Proven time.Time `json:"proven,omitzero"`
}

// DrillFile is the drill of one backup file.
type DrillFile struct {
	Destination string `json:"destination"`
	Path        string `json:"path"`
	OK          bool   `json:"ok"`
	// Error says why the drill failed: the file would not restore, or restored with other
	// row counts than the export recorded.
	Error string `json:"error,omitempty"`
}

// SyncResult is the result of a sync task: one session per identity.
type SyncResult struct {
	Sessions []syncer.Result `json:"sessions"`
}

// Backup is one encrypted backup file the agent wrote.
type Backup struct {
	Path        string                     `json:"path"`
	Destination string                     `json:"destination"`
	IdentityKey string                     `json:"identityKey"`
	Size        int64                      `json:"size"`
	SHA256      string                     `json:"sha256"`
	Rows        map[wallet.TableName]int64 `json:"rows"`
	CreatedAt   time.Time                  `json:"createdAt"`
}

// ServerRestorePreview is the result of a KindServerPreview task: the server, the identity,
// and what the server holds for it, counted in the staging wallet.
type ServerRestorePreview struct {
	ServerCheck
	Wallet string                     `json:"wallet"`
	Counts map[wallet.TableName]int64 `json:"counts"`
	Total  int64                      `json:"total"`
	// Staging names the staging wallet in the agent's server-staging folder.
	Staging string `json:"staging"`
	// Plan is, table by table, what merging the staged rows into the wallet would do (new,
	// updated, unchanged, skipped as older), as a backup file's preview says; Changes sums it.
	Plan    wallet.MergePlan   `json:"plan,omitempty"`
	Changes wallet.MergeCounts `json:"changes"`
	// ConflictTotal counts the staged rows the wallet's unique keys refuse (the merge would
	// fail on them half-way).
	ConflictTotal int `json:"conflictTotal,omitempty"`
}

// ServerRestoreResult is the result of a KindServerRestore task.
type ServerRestoreResult struct {
	SyncResult
	URL         string `json:"url"`
	Wallet      string `json:"wallet"`
	IdentityKey string `json:"identityKey"`
}

// ServiceStatus is what the service manager says about the agent's service. The strings
// are a wire format.
type ServiceStatus string

// Service states.
const (
	ServiceRunning      ServiceStatus = "running"
	ServiceStopped      ServiceStatus = "stopped"
	ServiceNotInstalled ServiceStatus = "not-installed"
	// ServiceUnavailable: the platform has no service manager walletsync installs with
	// (ErrNoServiceManager). Not a failure: the agent runs while started by hand.
	ServiceUnavailable ServiceStatus = "unavailable"
)

// ServiceInfo is the body of GET /api/v1/service.
type ServiceInfo struct {
	Platform string        `json:"platform"`
	Status   ServiceStatus `json:"status,omitempty"`
	// Note explains an unavailable service in plain words; Error and Hint report a
	// failure to ask the service manager.
	Note  string `json:"note,omitempty"`
	Error string `json:"error,omitempty"`
	Hint  string `json:"hint,omitempty"`
}

// ServerPushResult is the result of a push to a storage server.
type ServerPushResult struct {
	SyncResult
	// Wire is the wire the push spoke, as remote.Dial chose it: "walletsync" (the paged
	// wire, where the server offers it) or "toolbox" (BRC-40 chunks).
	Wire remote.Wire `json:"wire,omitempty"`
	// ConfirmedAt is when the server acknowledged the push's last commit (the page
	// session's, or the final processSyncChunk: the chunk that completed the sync): from
	// then on it holds the wallet as it was. Zero when the push did not complete.
	ConfirmedAt time.Time `json:"confirmedAt,omitzero"`
}

// BackupRecord is a recorded backup file with what verifying it found.
type BackupRecord struct {
	Backup
	VerifiedAt  time.Time `json:"verifiedAt,omitzero"`
	VerifyError string    `json:"verifyError,omitempty"`
}
