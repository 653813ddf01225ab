// Package bundle makes, checks and restores whole-store snapshot bundles: a verifiable copy
// of the entire wallet file (every identity, settings, sync states, walletsync's own tables),
// where a BRC-39 file carries one identity's rows.
//
// A bundle is a folder of two files:
//
//	manifest.json       what the bundle holds (Manifest): format, versions, schema, chain,
//	                    storage and identities, the rows of every table, sizes and SHA-256s
//	wallet.sqlite.zst   the wallet file as of one moment, zstd-compressed
//
// Create takes the copy with SQLite's online backup API while the wallet stays in use (each
// step under a background read grant of the access queue), writes both files privately
// (0600), fsynced, into a temporary sibling folder and renames that into place, never over an
// existing path: a bundle is whole or absent. Verify checks a bundle without touching any
// wallet. Restore stages the copy beside the target, checks it and swaps it in through
// localstore.Replace, whose recovery marker lets the next open finish or undo a restore that a
// crash interrupted.
package bundle

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	"github.com/klauspost/compress/zstd"

	"walletsync/internal/safefile"
	"walletsync/localstore"
	"walletsync/scheduler"
	"walletsync/wallet"
)

// File names inside a bundle folder.
const (
	ManifestName = "manifest.json"
	WalletName   = "wallet.sqlite.zst"
)

// FormatName and FormatVersion identify the bundle layout. A reader refuses another name and
// a newer version.
const (
	FormatName    = "walletsync-bundle"
	FormatVersion = 1
)

// Manifest describes a bundle. It is written last, so a folder with a manifest is complete;
// Verify checks every claim in it against the files.
type Manifest struct {
	Format            string    `json:"format"`
	FormatVersion     int       `json:"formatVersion"`
	WalletsyncVersion string    `json:"walletsyncVersion"`
	CreatedAt         time.Time `json:"createdAt"`
	Schema            Schema    `json:"schema"`
	// Chain, StorageIdentityKey and StorageName come from the wallet's settings row.
	Chain              wallet.Chain `json:"chain"`
	StorageIdentityKey string       `json:"storageIdentityKey"`
	StorageName        string       `json:"storageName"`
	// Identities are the wallet's users with their rows per table.
	Identities []Identity `json:"identities"`
	// Tables holds the rows of every table in the file, the toolbox's and walletsync's.
	Tables map[string]int64 `json:"tables"`
	// SourceSizeBytes is the wallet's size on disk when the bundle was made (file plus WAL).
	SourceSizeBytes int64  `json:"sourceSizeBytes"`
	Files           []File `json:"files"`
}

// Schema names the schema versions of the bundled file.
type Schema struct {
	// ToolboxMigrations is how many Knex migrations the file records, ToolboxLatest the last.
	ToolboxMigrations int    `json:"toolboxMigrations"`
	ToolboxLatest     string `json:"toolboxLatest"`
	// Walletsync is the highest walletsync migration the file records.
	Walletsync int `json:"walletsync"`
}

// Identity is one user of the bundled wallet.
type Identity struct {
	IdentityKey string                     `json:"identityKey"`
	Rows        map[wallet.TableName]int64 `json:"rows"`
}

// File is one data file of a bundle: its stored (compressed) size and digest, and the size
// and digest of what it decompresses to.
type File struct {
	Name         string `json:"name"`
	Compression  string `json:"compression"` // "zstd"
	SizeBytes    int64  `json:"sizeBytes"`
	SHA256       string `json:"sha256"`
	RawSizeBytes int64  `json:"rawSizeBytes"`
	RawSHA256    string `json:"rawSha256"`
}

// Steps of Create, for crash tests: the hook is called once each step is done.
const (
	// HookTempCreated: the temporary sibling folder exists, empty.
	HookTempCreated = "temp-created"
	// HookSnapshotted: the snapshot is copied into the temporary folder.
	HookSnapshotted = "snapshotted"
	// HookCompressed: the compressed copy is written and fsynced.
	HookCompressed = "compressed"
	// HookManifested: the manifest is written and fsynced; the folder is not yet renamed.
	HookManifested = "manifested"
	// HookRenamed: the bundle is in place, durably.
	HookRenamed = "renamed"
)

// StepPages is how many database pages one step of a bundle's snapshot copies by default:
// 64 pages of 4 KiB. After each step Create pauses as long as the step took, so that the copy
// takes at most half of the time of the core it runs on. The copying is what slows a wallet in
// use while a bundle is made, more than the compression or the access queue's grants: in a
// controlled run (the bench's foreground reads every 5 ms beside the snapshot alone, under a
// real-time priority on a loaded two-core machine) the foreground p95 was 1.5x to 3.6x idle
// with back-to-back steps of 256 pages, and 1.0x to 1.3x with these steps and pauses, which
// made the snapshot about 1.6 times as long.
const StepPages = 64

// CreateOptions tune Create. The zero value copies without an access queue.
type CreateOptions struct {
	// Grants, when set, is the access-queue session of the wallet: each backup step runs
	// under a background read grant of it, so foreground work goes between steps.
	Grants *scheduler.Session
	// PagesPerStep is how many database pages one step copies (StepPages when 0).
	PagesPerStep int
	// Hook, when set, is called after each step (HookTempCreated ... HookRenamed). It exists
	// for fault injection; production code leaves it nil.
	Hook func(point string)
}

// Create writes a bundle of the whole store src into the new folder out, whose parent must
// exist, and returns its manifest. It refuses an existing out (fs.ErrExist). The copy is
// consistent as of one moment while src stays in use; src may be open read-only (another
// process, the agent, may hold the wallet). On any failure, and after a crash, out does not
// exist; a crash may leave a ".NAME.tmp-*" sibling folder, which is safe to delete.
func Create(ctx context.Context, src *localstore.Store, out string, opts CreateOptions) (m Manifest, err error) {
	hook := opts.Hook
	if hook == nil {
		hook = func(string) {}
	}
	out = filepath.Clean(out)
	if _, err := os.Lstat(out); err == nil {
		return m, fmt.Errorf("create bundle %s: %w", out, fs.ErrExist)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(out), "."+filepath.Base(out)+".tmp-")
	if err != nil {
		return m, fmt.Errorf("create bundle: %w", err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
		}
	}()
	hook(HookTempCreated)

	raw := filepath.Join(tmp, "wallet.sqlite")
	// The snapshot is scratch: compressed, then removed; only the compressed copy is fsynced.
	bo := localstore.BackupOptions{PagesPerStep: opts.PagesPerStep, Scratch: true, Gate: pacedGate(opts.Grants)}
	if bo.PagesPerStep == 0 {
		bo.PagesPerStep = StepPages
	}
	if err := src.Backup(ctx, raw, bo); err != nil {
		return m, fmt.Errorf("create bundle: %w", err)
	}
	hook(HookSnapshotted)
	if m, err = describe(ctx, raw); err != nil {
		return m, fmt.Errorf("create bundle: %w", err)
	}
	m.SourceSizeBytes = sizeOnDisk(src.Path())
	f, err := compress(raw, filepath.Join(tmp, WalletName))
	if err != nil {
		return m, fmt.Errorf("create bundle: compress: %w", err)
	}
	m.Files = []File{f}
	if err := os.Remove(raw); err != nil {
		return m, fmt.Errorf("create bundle: %w", err)
	}
	hook(HookCompressed)
	b, err := EncodeManifest(m)
	if err != nil {
		return m, fmt.Errorf("create bundle: %w", err)
	}
	if err := writeNew(filepath.Join(tmp, ManifestName), b); err != nil {
		return m, fmt.Errorf("create bundle: write manifest: %w", err)
	}
	if err := safefile.SyncDir(tmp); err != nil {
		return m, fmt.Errorf("create bundle: %w", err)
	}
	hook(HookManifested)
	if err := safefile.RenameNoReplace(tmp, out); err != nil {
		return m, fmt.Errorf("create bundle: %w", err)
	}
	if err := safefile.SyncDir(filepath.Dir(out)); err != nil {
		return m, fmt.Errorf("create bundle: %w", err)
	}
	hook(HookRenamed)
	return m, nil
}

// pacedGate is the gate of a bundle's snapshot steps (see StepPages): before each step it
// pauses as long as the previous step took, then takes a background read grant of grants
// (when set), released right after the step.
func pacedGate(grants *scheduler.Session) func(ctx context.Context) (func(), error) {
	var last time.Duration
	return func(ctx context.Context) (func(), error) {
		if last > 0 {
			t := time.NewTimer(last)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, ctx.Err()
			case <-t.C:
			}
		}
		release := func() {}
		if grants != nil {
			grant, err := grants.Acquire(ctx, scheduler.Background, scheduler.Read)
			if err != nil {
				return nil, fmt.Errorf("wait for a read grant: %w", err)
			}
			release = func() { grants.Release(grant) }
		}
		start := time.Now()
		return func() {
			release()
			last = time.Since(start)
		}, nil
	}
}

// describe opens a snapshot file read-only (which inspects its schema) and fills a manifest
// with what it holds.
func describe(ctx context.Context, path string) (Manifest, error) {
	m := Manifest{Format: FormatName, FormatVersion: FormatVersion, WalletsyncVersion: walletsyncVersion(), CreatedAt: wallet.Now().UTC()}
	s, err := localstore.Open(ctx, path, localstore.Options{ReadOnly: true})
	if err != nil {
		return m, err
	}
	defer s.Close()
	info, err := s.Info(ctx)
	if err != nil {
		return m, err
	}
	c, err := s.Census(ctx)
	if err != nil {
		return m, err
	}
	m.Chain, m.StorageIdentityKey, m.StorageName = info.Settings.Chain, info.Settings.StorageIdentityKey, info.Settings.StorageName
	m.Identities = []Identity{}
	for _, id := range info.Identities {
		m.Identities = append(m.Identities, Identity{IdentityKey: id.IdentityKey, Rows: id.Counts})
	}
	m.Tables = c.Tables
	m.Schema = Schema{ToolboxMigrations: len(c.ToolboxMigrations), Walletsync: c.WalletsyncVersion}
	if n := len(c.ToolboxMigrations); n > 0 {
		m.Schema.ToolboxLatest = c.ToolboxMigrations[n-1]
	}
	return m, nil
}

// compress writes the zstd form of the file at from into a new private file at to, fsynced,
// and returns both sizes and digests.
func compress(from, to string) (f File, err error) {
	in, err := os.Open(from)
	if err != nil {
		return f, err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return f, err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
	}()
	stored := newCounter()
	// One encoder goroutine: a bundle is background work, and the default (one per core)
	// takes the CPU the wallet's foreground work needs.
	enc, err := zstd.NewWriter(io.MultiWriter(out, stored), zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithWindowSize(maxWindow), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return f, err
	}
	rawSum := newCounter()
	if _, err := io.Copy(io.MultiWriter(enc, rawSum), in); err != nil {
		enc.Close()
		return f, err
	}
	if err := enc.Close(); err != nil {
		return f, err
	}
	if err := out.Sync(); err != nil {
		return f, err
	}
	return File{Name: filepath.Base(to), Compression: "zstd", SizeBytes: stored.n, SHA256: stored.sum(),
		RawSizeBytes: rawSum.n, RawSHA256: rawSum.sum()}, nil
}

// writeNew writes data into a new private file, fsynced.
func writeNew(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

// counter hashes and counts what is written through it.
type counter struct {
	h hash.Hash
	n int64
}

func newCounter() *counter { return &counter{h: sha256.New()} }

func (c *counter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return c.h.Write(p)
}

func (c *counter) sum() string { return hex.EncodeToString(c.h.Sum(nil)) }

func sizeOnDisk(path string) int64 {
	var n int64
	for _, suffix := range []string{"", "-wal"} {
		if fi, err := os.Stat(path + suffix); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// walletsyncVersion names the binary: its module version and, when built from a checkout, the
// commit.
func walletsyncVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v += " " + s.Value[:12]
		}
	}
	return v
}
