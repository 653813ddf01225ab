package agent

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
	"walletsync/agent/api"

	"walletsync/portable/brc39"
	"walletsync/wallet"
)

// passwordProvenFact is the state database's fact of when the person last proved, with
// "test my password", that they know the unattended backup password.
const passwordProvenFact = "password-proven"

// passwordProof is the stored fact: when, and a keyed digest of the password proven, so
// that a later change of the unattended password is seen to void the proof. The digest is
// no weaker than what sits beside it: the secrets file in the same private folder holds
// the password itself.
type passwordProof struct {
	At   time.Time `json:"at"`
	Salt []byte    `json:"salt"`
	MAC  []byte    `json:"mac"`
}

func (p passwordProof) matches(password string) bool {
	return len(p.Salt) > 0 && hmac.Equal(p.MAC, passwordMAC(p.Salt, password))
}

func passwordMAC(salt []byte, password string) []byte {
	m := hmac.New(sha256.New, salt)
	m.Write([]byte(password))
	return m.Sum(nil)
}

// TestPassword is "test my password": it decrypts the newest backup file of the backup
// folders with password, checking its whole tag, and says whether it opens. It writes
// nothing: the plaintext goes nowhere (io.Discard), no wallet or backup is touched. When
// the password opens the file and is the unattended one, the agent notes when, for the
// restore drill to report. The key derivation waits its turn with every other task's.
// With no backup file yet it fails with wallet.ErrNotFound; a file that fails for
// another reason than the password (truncated, damaged header) is that error.
func (a *Agent) TestPassword(ctx context.Context, password api.Secret) (api.PasswordTest, error) {
	if password.IsZero() || password.Reveal() == "" {
		return api.PasswordTest{}, api.WithHint(fmt.Errorf("test password: no password: %w", wallet.ErrInvalidArgument), "type the backup password")
	}
	var newest api.BackupRecord
	for _, d := range a.config().Destinations {
		if d.Kind != api.DestinationFolder {
			continue
		}
		recs, err := a.backupsHere(ctx, d)
		if err != nil {
			return api.PasswordTest{}, err
		}
		if len(recs) > 0 && recs[0].CreatedAt.After(newest.CreatedAt) {
			newest = recs[0]
		}
	}
	if newest.Path == "" {
		return api.PasswordTest{}, api.WithHint(fmt.Errorf("test password: no backup file yet: %w", wallet.ErrNotFound),
			"run a backup folder's backup first (Destinations, Run now); then test the password on it")
	}
	res := api.PasswordTest{File: newest.Path, Destination: newest.Destination}
	err := a.decrypts(ctx, newest.Path, password.Reveal())
	switch {
	case errors.Is(err, brc39.ErrAuthFailed):
		res.Message = fmt.Sprintf("That password does not open %s, the newest backup. Nothing was changed.", filepath.Base(newest.Path))
	case err != nil:
		return api.PasswordTest{}, fmt.Errorf("test password on %s: %w", newest.Path, err)
	default:
		res.Opens = true
		res.Message = fmt.Sprintf("Your password opens %s, the newest backup.", filepath.Base(newest.Path))
		stored, serr := a.secrets.Get(BackupPasswordKey)
		res.Unattended = serr == nil && hmac.Equal([]byte(stored.Reveal()), []byte(password.Reveal()))
		if res.Unattended {
			if err := a.notePasswordProven(ctx, password.Reveal()); err != nil {
				return api.PasswordTest{}, err
			}
		} else {
			res.Message += " It is not the password walletsync now writes backups with: newer backups will need that one."
		}
	}
	proven, err := a.passwordProven(ctx)
	if err != nil {
		return api.PasswordTest{}, err
	}
	res.Proven = proven
	return res, nil
}

// decrypts decrypts the BRC-39 file at path with password into nothing, verifying its
// whole tag, under the agent's key-derivation gate.
func (a *Agent) decrypts(ctx context.Context, path, password string) error {
	release, err := a.deriveGate(ctx)
	if err != nil {
		return err
	}
	defer release()
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = brc39.Decrypt(ctx, f, password, brc39.DefaultKDFLimits, io.Discard)
	return err
}

// notePasswordProven records that password was proven now.
func (a *Agent) notePasswordProven(ctx context.Context, password string) error {
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return fmt.Errorf("note password proven: %w", err)
	}
	return a.state.SetFact(ctx, passwordProvenFact, passwordProof{At: a.now().UTC(), Salt: salt, MAC: passwordMAC(salt, password)})
}

// passwordProven returns when the current unattended password was last proven, zero when
// never or when the password has changed since.
func (a *Agent) passwordProven(ctx context.Context) (time.Time, error) {
	var p passwordProof
	ok, err := a.state.Fact(ctx, passwordProvenFact, &p)
	if err != nil || !ok {
		return time.Time{}, err
	}
	stored, err := a.secrets.Get(BackupPasswordKey)
	if err != nil || !p.matches(stored.Reveal()) {
		return time.Time{}, nil //nolint:nilerr // no password, or another: nothing proven
	}
	return p.At, nil
}
