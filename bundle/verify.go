package bundle

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/klauspost/compress/zstd"

	"walletsync/localstore"
	"walletsync/wallet"
)

// MaxManifestBytes bounds a manifest before it is parsed. A real one is a few KiB: its size
// grows with the identities (about 600 bytes each), so 1 MiB holds well over a thousand.
const MaxManifestBytes = 1 << 20

// maxWindow is the zstd window Create writes with and the most a reader accepts: the
// decoder's memory stays near this whatever a hostile file declares.
const maxWindow = 8 << 20

// EncodeManifest returns the manifest's JSON form, indented for people who open the file.
func EncodeManifest(m Manifest) ([]byte, error) {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode manifest: %w", err)
	}
	return append(b, '\n'), nil
}

// DecodeManifest parses and checks a manifest read from outside: at most MaxManifestBytes,
// one JSON object and nothing after it, this format at a version this binary reads, exactly
// one zstd data file named WalletName with plausible sizes and SHA-256 digests, a known chain.
// A refusal is a *wallet.BundleError (its cause wallet.ErrSchemaTooNew for a newer format).
func DecodeManifest(b []byte) (Manifest, error) {
	var m Manifest
	bad := func(format string, args ...any) (Manifest, error) {
		return m, &wallet.BundleError{File: ManifestName, Reason: fmt.Sprintf(format, args...)}
	}
	if len(b) > MaxManifestBytes {
		return bad("larger than %d bytes", MaxManifestBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&m); err != nil {
		return bad("not a manifest: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return bad("data after the manifest")
	}
	if m.Format != FormatName {
		return bad("format %q is not %q", m.Format, FormatName)
	}
	if m.FormatVersion > FormatVersion {
		return m, &wallet.BundleError{File: ManifestName, Reason: fmt.Sprintf("format version %d is newer than this walletsync's %d", m.FormatVersion, FormatVersion), Err: wallet.ErrSchemaTooNew}
	}
	if m.FormatVersion < 1 {
		return bad("format version %d", m.FormatVersion)
	}
	if _, err := wallet.ParseChain(string(m.Chain)); err != nil {
		return bad("chain %q", m.Chain)
	}
	if len(m.Files) != 1 || m.Files[0].Name != WalletName || m.Files[0].Compression != "zstd" {
		return bad("the bundle must hold one zstd file named %s", WalletName)
	}
	f := m.Files[0]
	if f.SizeBytes <= 0 || f.RawSizeBytes <= 0 || !isSHA256(f.SHA256) || !isSHA256(f.RawSHA256) {
		return bad("%s: sizes must be positive and digests hex SHA-256", f.Name)
	}
	if m.Tables == nil || m.Identities == nil {
		return bad("tables or identities missing")
	}
	return m, nil
}

func isSHA256(s string) bool {
	b, err := hex.DecodeString(s)
	return err == nil && len(b) == 32 && hex.EncodeToString(b) == s
}

// ReadManifest reads and checks dir's manifest (DecodeManifest). A missing folder or manifest
// is a *wallet.BundleError whose cause is fs.ErrNotExist.
func ReadManifest(dir string) (Manifest, error) {
	f, err := os.Open(filepath.Join(dir, ManifestName))
	if err != nil {
		return Manifest{}, &wallet.BundleError{Dir: dir, File: ManifestName, Reason: "cannot read", Err: err}
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxManifestBytes+1))
	if err != nil {
		return Manifest{}, &wallet.BundleError{Dir: dir, File: ManifestName, Reason: "cannot read", Err: err}
	}
	m, err := DecodeManifest(b)
	var be *wallet.BundleError
	if errors.As(err, &be) {
		be.Dir = dir
	}
	return m, err
}

// Verify checks the bundle in dir without touching any wallet: the manifest, each file's size
// and SHA-256, the decompressed copy's size and SHA-256, SQLite's integrity and foreign key
// checks on the copy (in a private temporary folder, removed after), its schema (a newer one
// is a *wallet.SchemaError), and every count and name in the manifest against the copy. Any
// other failure is a *wallet.BundleError.
func Verify(ctx context.Context, dir string) (Manifest, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return m, fmt.Errorf("verify bundle: %w", err)
	}
	tmp, err := os.MkdirTemp("", "walletsync-bundle-verify-")
	if err != nil {
		return m, fmt.Errorf("verify bundle: %w", err)
	}
	defer os.RemoveAll(tmp)
	copyPath := filepath.Join(tmp, "wallet.sqlite")
	if err := unpack(ctx, dir, m, copyPath); err != nil {
		return m, fmt.Errorf("verify bundle: %w", err)
	}
	if err := check(ctx, dir, copyPath, m); err != nil {
		return m, fmt.Errorf("verify bundle: %w", err)
	}
	return m, nil
}

// unpack decompresses the bundle's data file into a new private file at to, checking the
// stored size and digest and the decompressed ones against the manifest. Decompression stops
// at the manifest's raw size plus one byte, and the decoder's window is capped, so a hostile
// file costs bounded memory and disk.
func unpack(ctx context.Context, dir string, m Manifest, to string) (err error) {
	mf := m.Files[0]
	bad := func(reason string, cause error) error {
		return &wallet.BundleError{Dir: dir, File: mf.Name, Reason: reason, Err: cause}
	}
	in, err := os.Open(filepath.Join(dir, mf.Name))
	if err != nil {
		return bad("cannot read", err)
	}
	defer in.Close()
	if fi, err := in.Stat(); err != nil {
		return bad("cannot read", err)
	} else if fi.Size() != mf.SizeBytes {
		return bad(fmt.Sprintf("%d bytes where the manifest says %d (truncated or replaced)", fi.Size(), mf.SizeBytes), nil)
	}
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
	}()
	stored := newCounter()
	dec, err := zstd.NewReader(io.TeeReader(ctxReader{ctx, in}, stored), zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderMaxWindow(maxWindow), zstd.WithDecoderMaxMemory(maxWindow))
	if err != nil {
		return err
	}
	defer dec.Close()
	raw := newCounter()
	_, err = io.Copy(io.MultiWriter(out, raw), io.LimitReader(dec, mf.RawSizeBytes+1))
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return err // writing the copy failed: the disk, not the bundle
		}
		return bad("cannot decompress (damaged)", err)
	}
	// Whatever follows the compressed stream counts towards the file's digest too.
	if _, err := io.Copy(stored, in); err != nil {
		return bad("cannot read", err)
	}
	switch {
	case stored.sum() != mf.SHA256:
		return bad("SHA-256 differs from the manifest's (damaged or replaced)", nil)
	case raw.n != mf.RawSizeBytes:
		return bad(fmt.Sprintf("decompresses to %d bytes where the manifest says %d", raw.n, mf.RawSizeBytes), nil)
	case raw.sum() != mf.RawSHA256:
		return bad("decompressed SHA-256 differs from the manifest's", nil)
	}
	return nil
}

// ctxReader ends a long read when ctx ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// check opens an unpacked copy read-only (a newer schema is refused there, as a
// *wallet.SchemaError), runs SQLite's integrity and foreign key checks on it, and compares
// what it holds with the manifest.
func check(ctx context.Context, dir, path string, m Manifest) error {
	bad := func(reason string, cause error) error {
		return &wallet.BundleError{Dir: dir, File: WalletName, Reason: reason, Err: cause}
	}
	s, err := localstore.Open(ctx, path, localstore.Options{ReadOnly: true})
	var se *wallet.SchemaError
	switch {
	case errors.As(err, &se):
		se.Path = filepath.Join(dir, WalletName)
		return err
	case err != nil:
		return bad("not a wallet", err)
	}
	defer s.Close()
	rep, err := s.CheckIntegrity(ctx)
	if err != nil {
		return bad("integrity check", err)
	}
	if !rep.OK {
		return bad(fmt.Sprintf("integrity check found %d problems and %d broken foreign keys", len(rep.Problems), len(rep.ForeignKeys)), wallet.ErrCorrupt)
	}
	got, err := describe(ctx, path)
	if err != nil {
		return bad("describe the copy", err)
	}
	lie := func(what string, want, have any) error {
		return &wallet.BundleError{Dir: dir, File: ManifestName, Reason: fmt.Sprintf("the manifest says %s %v, the copy holds %v", what, want, have)}
	}
	switch {
	case got.Schema != m.Schema:
		return lie("schema", m.Schema, got.Schema)
	case got.Chain != m.Chain:
		return lie("chain", m.Chain, got.Chain)
	case got.StorageIdentityKey != m.StorageIdentityKey:
		return lie("storage identity", m.StorageIdentityKey, got.StorageIdentityKey)
	}
	for _, t := range slices.Sorted(maps.Keys(mergeKeys(m.Tables, got.Tables))) {
		if m.Tables[t] != got.Tables[t] {
			return lie("rows in "+t, m.Tables[t], got.Tables[t])
		}
	}
	if len(got.Identities) != len(m.Identities) {
		return lie("identities", len(m.Identities), len(got.Identities))
	}
	for i, id := range got.Identities {
		if m.Identities[i].IdentityKey != id.IdentityKey || !maps.Equal(m.Identities[i].Rows, id.Rows) {
			return lie("identity "+m.Identities[i].IdentityKey+" with rows", m.Identities[i].Rows, id.Rows)
		}
	}
	return nil
}

// mergeKeys returns a map with the keys of both.
func mergeKeys(a, b map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for k := range a {
		out[k] = 0
	}
	for k := range b {
		out[k] = 0
	}
	return out
}
