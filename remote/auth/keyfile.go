package auth

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

// A key file holds one secp256k1 private key, the wallet's identity (root) key, as exactly
// 64 lower-case hex digits and a newline, readable by its owner only (mode 0600).

// KeyFileError says why a key file was refused. It unwraps to ErrKeyFileMode for a file
// other users can read or write, else to ErrKeyFile.
type KeyFileError struct {
	Path   string
	Reason string
	Mode   fs.FileMode // the file's permissions, for ErrKeyFileMode
}

func (e *KeyFileError) Error() string {
	if e.Mode != 0 {
		return fmt.Sprintf("key file %s: mode %04o lets other users read it; run chmod 600 %s", e.Path, e.Mode.Perm(), e.Path)
	}
	return fmt.Sprintf("key file %s: %s", e.Path, e.Reason)
}

// Unwrap makes errors.Is(err, ErrKeyFileMode) or errors.Is(err, ErrKeyFile) true.
func (e *KeyFileError) Unwrap() error {
	if e.Mode != 0 {
		return ErrKeyFileMode
	}
	return ErrKeyFile
}

// keyFileLen is 64 hex digits and a newline.
const keyFileLen = 65

// CreateKeyFile writes a new random private key to path with mode 0600 and returns it. It
// never replaces a file: an existing path is an error wrapping fs.ErrExist. The file is
// synced before CreateKeyFile returns; on a failure after creating it, it is removed.
func CreateKeyFile(path string) (*secp256k1.PrivateKey, error) {
	key, err := secp256k1.GeneratePrivateKeyFromRand(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("create key file: %w", err)
	}
	if err := WriteKeyFile(path, key); err != nil {
		return nil, err
	}
	return key, nil
}

// WriteKeyFile writes key to path as a key file (mode 0600), as CreateKeyFile does for a
// new key: it never replaces a file (an existing path is an error wrapping fs.ErrExist), it
// syncs the file before returning, and it removes the file on a failure after creating it.
func WriteKeyFile(path string, key *secp256k1.PrivateKey) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("create key file: %w", err)
	}
	b := key.Key.Bytes()
	_, err = f.Write(append([]byte(hex.EncodeToString(b[:])), '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("create key file: %w", err)
	}
	return nil
}

// LoadKeyFile reads the private key in path. It refuses (with a *KeyFileError) a file that
// group or other users may read or write (on Unix; Windows has no such mode bits), and one
// that is not exactly 64 lower-case hex digits and a newline naming a valid key (1 to n-1).
func LoadKeyFile(path string) (*secp256k1.PrivateKey, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load key file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("load key file: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, &KeyFileError{Path: path, Reason: "not a regular file"}
	}
	if runtime.GOOS != "windows" && st.Mode().Perm()&0o077 != 0 {
		return nil, &KeyFileError{Path: path, Mode: st.Mode().Perm()}
	}
	data, err := io.ReadAll(io.LimitReader(f, keyFileLen+1))
	if err != nil {
		return nil, fmt.Errorf("load key file: %w", err)
	}
	key, err := ParseKeyFile(data)
	if err != nil {
		var kfe *KeyFileError
		if errors.As(err, &kfe) {
			kfe.Path = path
		}
		return nil, err
	}
	return key, nil
}

// ParseKeyFile decodes a key file's content: exactly 64 lower-case hex digits and a
// newline, for a scalar from 1 to n-1. Anything else is a *KeyFileError (ErrKeyFile).
func ParseKeyFile(data []byte) (*secp256k1.PrivateKey, error) {
	if len(data) != keyFileLen || data[64] != '\n' {
		return nil, &KeyFileError{Reason: "not 64 hex digits and a newline"}
	}
	digits := data[:64]
	if !bytes.Equal(bytes.ToLower(digits), digits) {
		return nil, &KeyFileError{Reason: "hex digits must be lower case"}
	}
	raw, err := hex.DecodeString(string(digits))
	if err != nil {
		return nil, &KeyFileError{Reason: "not hex"}
	}
	var k secp256k1.ModNScalar
	if overflow := k.SetByteSlice(raw); overflow || k.IsZero() {
		return nil, &KeyFileError{Reason: "not a valid secp256k1 private key (0 or not below the curve order)"}
	}
	return secp256k1.NewPrivateKey(&k), nil
}
