package portable

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"walletsync/internal/safefile"
	"walletsync/portable/brc38"
	"walletsync/portable/brc39"
	"walletsync/wallet"
)

// ExportOptions tune ExportBRC39 and ExportBRC38. The zero value is the defaults.
type ExportOptions struct {
	// ExportedAt is written as the document's exportedAt; time.Now() when zero. The time the
	// view was opened is the honest value: the document holds that snapshot.
	ExportedAt time.Time
	// Rand supplies the BRC-39 salt and nonce; crypto/rand when nil.
	Rand io.Reader
	// Overwrite lets the export replace an existing file at its path, and only a backup
	// file: never a wallet, a file held by walletsync, or anything else (CheckExportPath).
	Overwrite bool
	// Protected lists folders the export never writes into: walletsync's data folder.
	Protected []string
	// KDFGate, when set, admits ExportBRC39's key derivation (see KDFGate).
	KDFGate KDFGate
}

// ExportResult describes a finished export file.
type ExportResult struct {
	Path   string
	Size   int64    // the file's length in bytes
	SHA256 [32]byte // of the file's bytes
	// Stats describes the document inside: its length, the rows per table (which a restore
	// drill compares later) and the places it may differ from the toolbox's export.
	Stats brc38.Stats
	// KDFTime is Argon2id's share of Elapsed (zero for a plaintext export), so reports can
	// show the deliberate cost of the password apart from the work of the export.
	KDFTime time.Duration
	Elapsed time.Duration
}

// ExportBRC39 writes the user identityKey's wallet, read from the view v of a store whose
// settings row is settings, to dstPath as a BRC-39 file: the canonical BRC-38 document
// (brc38.Encode) encrypted under password with params (refused before any work when weaker
// than brc39.DefaultKDFParams, see brc39.KDFParams.CheckExport).
//
// The file appears at dstPath complete or not at all: it is written to a private (0600)
// temporary file in dstPath's folder, synced, moved to dstPath and the folder synced. An
// existing dstPath is refused before any work, unless opts.Overwrite asks to replace it and
// it is a backup file (see CheckExportPath); it is then replaced atomically. On any failure,
// a cancelled ctx included, the temporary file is removed and dstPath is left as it was; a
// full disk fails with wallet.ErrDiskFull. Only a failure to sync the folder after the move
// returns an error with the complete file in place.
//
// Before the file is kept, the document is decoded as it is written (brc38.Decode, concurrently,
// with its memory of about 8 bytes per row) and must validate, so a store whose data would
// make an invalid document (rows that reference another user's rows) fails the export with
// the *brc38.DocumentError instead of leaving a backup that no importer accepts.
func ExportBRC39(ctx context.Context, v wallet.View, settings wallet.Settings, identityKey, password string, params brc39.KDFParams, dstPath string, opts ExportOptions) (ExportResult, error) {
	if err := params.CheckExport(); err != nil {
		return ExportResult{}, fmt.Errorf("export BRC-39: %w", err)
	}
	res, err := export(ctx, v, settings, identityKey, dstPath, opts, func(w io.Writer) (io.WriteCloser, time.Duration, error) {
		e, err := gated(ctx, opts.KDFGate, func() (*brc39.Encrypter, error) { return brc39.Encrypt(ctx, w, password, params, opts.Rand) })
		if err != nil {
			return nil, 0, err
		}
		return e, e.KDFTime(), nil
	})
	if err != nil {
		return res, fmt.Errorf("export BRC-39: %w", err)
	}
	return res, nil
}

// ExportBRC38 writes the plaintext BRC-38 document, exactly as ExportBRC39 does in every
// other respect (private file, refusals, atomic move, verification). The file holds the wallet's keys
// unencrypted: callers offer it only when a person asks for it explicitly.
func ExportBRC38(ctx context.Context, v wallet.View, settings wallet.Settings, identityKey, dstPath string, opts ExportOptions) (ExportResult, error) {
	res, err := export(ctx, v, settings, identityKey, dstPath, opts, func(w io.Writer) (io.WriteCloser, time.Duration, error) {
		return nopCloser{w}, 0, nil
	})
	if err != nil {
		return res, fmt.Errorf("export BRC-38: %w", err)
	}
	return res, nil
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// sealer wraps the file's writer in the format's envelope (the brc39.Encrypter, or nothing)
// and reports the KDF time it spent. Tests pass one with a cheap key.
type sealer func(w io.Writer) (io.WriteCloser, time.Duration, error)

func export(ctx context.Context, v wallet.View, settings wallet.Settings, identityKey, dstPath string, opts ExportOptions, seal sealer) (res ExportResult, err error) {
	start := time.Now()
	exportedAt := opts.ExportedAt
	if exportedAt.IsZero() {
		exportedAt = start
	}
	replace, err := CheckExportPath(dstPath, opts)
	if err != nil {
		return res, err
	}
	dir := filepath.Dir(dstPath)
	f, err := os.CreateTemp(dir, "."+filepath.Base(dstPath)+".tmp-*") // mode 0600
	if err != nil {
		return res, fmt.Errorf("create temp file: %w", safefile.Classify(err))
	}
	renamed := false
	defer func() {
		if err != nil && !renamed {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	hash := sha256.New()
	disk := &diskWriter{f: f}
	sealed, kdfTime, err := seal(io.MultiWriter(disk, hash))
	if err != nil {
		return res, err
	}
	stats, err := encodeVerified(ctx, v, settings, identityKey, exportedAt, sealed)
	if err != nil {
		return res, err
	}
	if err := sealed.Close(); err != nil {
		return res, err
	}
	if err := f.Sync(); err != nil {
		return res, fmt.Errorf("sync %s: %w", f.Name(), safefile.Classify(err))
	}
	if err := f.Close(); err != nil {
		return res, fmt.Errorf("close %s: %w", f.Name(), safefile.Classify(err))
	}
	if err := moveIntoPlace(f.Name(), dstPath, replace); err != nil {
		return res, fmt.Errorf("move into place: %w", err)
	}
	renamed = true
	res = ExportResult{Path: dstPath, Size: disk.n, Stats: stats, KDFTime: kdfTime}
	hash.Sum(res.SHA256[:0])
	if err := safefile.SyncDir(dir); err != nil {
		return res, fmt.Errorf("sync folder %s (the file is complete): %w", dir, err)
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

// verifyError marks a document that the encoder wrote and the decoder refused.
type verifyError struct{ err error }

func (e *verifyError) Error() string { return "verify the written document: " + e.err.Error() }
func (e *verifyError) Unwrap() error { return e.err }

// encodeVerified runs brc38.Encode into w and, through a pipe, brc38.Decode over the same bytes, and
// fails unless the decoder accepts the document and counts the rows the encoder wrote.
func encodeVerified(ctx context.Context, v wallet.View, settings wallet.Settings, identityKey string, exportedAt time.Time, w io.Writer) (brc38.Stats, error) {
	pr, pw := io.Pipe()
	type result struct {
		doc brc38.Document
		err error
	}
	verified := make(chan result, 1)
	go func() {
		doc, err := brc38.Decode(ctx, pr, nil, brc38.DecodeOptions{})
		if err != nil {
			// Fail the encoder's next write, so it stops instead of blocking on the pipe.
			pr.CloseWithError(&verifyError{err})
		} else {
			pr.Close()
		}
		verified <- result{doc, err}
	}()
	stats, err := brc38.Encode(ctx, v, settings, identityKey, exportedAt, io.MultiWriter(w, pw))
	pw.CloseWithError(err) // nil: the decoder sees the end of the document
	res := <-verified
	var ve *verifyError
	switch {
	case errors.As(err, &ve):
		return stats, ve
	case err != nil:
		return stats, err
	case res.err != nil:
		return stats, &verifyError{res.err}
	}
	for _, t := range append([]*wallet.Table{wallet.Users}, brc38.DocumentTables...) {
		if stats.Rows[t.Name] != res.doc.Rows[t.Name] {
			return stats, &verifyError{fmt.Errorf("%s: wrote %d rows, read back %d", t.Name, stats.Rows[t.Name], res.doc.Rows[t.Name])}
		}
	}
	return stats, nil
}
