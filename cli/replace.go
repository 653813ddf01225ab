package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"walletsync/internal/safefile"
	"walletsync/localstore"
)

// ErrWouldReplace is what a restore onto an existing wallet file returns, in a
// *ReplaceRefusedError, when it was not asked to replace it (--force).
var ErrWouldReplace = errors.New("the restore would replace an existing wallet file")

// ReplaceRefusedError says that a restore was refused because Path holds a wallet that it
// would replace, and which identities that wallet holds; nothing was written.
type ReplaceRefusedError struct {
	Path string
	// Identities are the wallet's identities; Lost those of them the restore does not
	// bring back (they would be lost with the file).
	Identities, Lost []string
	// NotWallet is why Path could not be read as a wallet ("" when it could).
	NotWallet string
}

func (e *ReplaceRefusedError) Error() string {
	var what string
	switch {
	case e.NotWallet != "":
		what = fmt.Sprintf("%s exists and is not a wallet walletsync can read (%s)", e.Path, e.NotWallet)
	case len(e.Identities) == 0:
		what = fmt.Sprintf("%s is a wallet that holds no identity", e.Path)
	default:
		var names []string
		for _, id := range e.Identities {
			note := "the restore brings back its rows as the backup has them; newer ones would be lost"
			if slices.Contains(e.Lost, id) {
				note = "not in the backup: it would be lost"
			}
			names = append(names, fmt.Sprintf("%s (%s)", id, note))
		}
		what = fmt.Sprintf("%s is a wallet of %d identities: %s", e.Path, len(e.Identities), strings.Join(names, "; "))
		if len(e.Identities) == 1 {
			what = fmt.Sprintf("%s is the wallet of %s", e.Path, names[0])
		}
	}
	return what + ": nothing was written; restore into a new file, or ask to replace it with --force (the replaced file is then kept beside it, as " +
		e.Path + ".replaced-<time>): " + ErrWouldReplace.Error()
}

// Unwrap makes errors.Is(err, ErrWouldReplace) true.
func (e *ReplaceRefusedError) Unwrap() error { return ErrWouldReplace }

// keepReplaced gets an existing wallet file at target ready to be replaced by a restore
// that brings back the identities restored. When target does not exist it returns "".
// Otherwise, without force, it refuses with a *ReplaceRefusedError naming target's
// identities (and which of them restored lacks), writing nothing. With force it writes a
// consistent copy of target (WAL included) to target.replaced-<UTC time> and returns that
// path: the person removes it once the restore is what they wanted. A restore that then
// fails leaves target as it was, and the caller removes the copy.
func keepReplaced(ctx context.Context, target string, restored []string, force bool, now time.Time) (string, error) {
	if _, err := os.Lstat(target); errors.Is(err, fs.ErrNotExist) {
		return "", nil
	} else if err != nil {
		return "", fmt.Errorf("look at %s: %w", target, err)
	}
	s, openErr := localstore.Open(ctx, target, localstore.Options{ReadOnly: true})
	if openErr == nil {
		defer s.Close()
	}
	if !force {
		refused := &ReplaceRefusedError{Path: target}
		if openErr != nil {
			refused.NotWallet = openErr.Error()
			return "", refused
		}
		ids, err := s.Identities(ctx)
		if err != nil {
			return "", err
		}
		refused.Identities = ids
		for _, id := range ids {
			if !slices.Contains(restored, id) {
				refused.Lost = append(refused.Lost, id)
			}
		}
		return "", refused
	}
	kept := target + ".replaced-" + now.UTC().Format("20060102T150405Z")
	var err error
	if openErr == nil {
		err = s.Backup(ctx, kept, localstore.BackupOptions{})
	} else {
		err = safefile.CopyNew(target, kept)
	}
	if err != nil {
		os.Remove(kept)
		return "", fmt.Errorf("keep the replaced file as %s: %w", kept, err)
	}
	return kept, nil
}

// identityKeys returns the identity keys of a bundle's manifest identities, or of any list
// of them.
func identityKeys[T any](ids []T, key func(T) string) []string {
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		out = append(out, key(id))
	}
	return out
}
