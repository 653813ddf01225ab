package api

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"
	"testing"
	"walletsync/portable/brc39"
	"walletsync/wallet"
)

// TestExplain_PlainWordsNameThePath: the failures a person meets read in plain words that
// name the path they typed (never a temp file's), with the next step; the technical text
// stays as the detail.
func TestExplain_PlainWordsNameThePath(t *testing.T) {
	notADB := fmt.Errorf("open backup wallet /d/backup.sqlite: %w", &wallet.ClassError{Class: wallet.ErrCorrupt, Err: errors.New("file is not a database (26)")})
	tests := []struct {
		name              string
		err               error
		message, hint     string
		path, detailsWord string
	}{
		{"temp file", &fs.PathError{Op: "open", Path: "relative/.backup.sqlite.new-2196926494", Err: syscall.ENOENT},
			"relative/backup.sqlite does not exist.", "Check the path", "relative/backup.sqlite", ".new-2196926494"},
		{"not a wallet", AtPath("/d/backup.sqlite", notADB),
			"/d/backup.sqlite is not a wallet file, or it is damaged", "choose a new file name", "/d/backup.sqlite", "(26)"},
		{"not a backup", AtPath("/d/notes.brc39", fmt.Errorf("read header: BRC-39 header magic 0x53514c69: %w", brc39.ErrBadHeader)),
			"/d/notes.brc39 is not an encrypted walletsync backup", "ends in .brc39", "/d/notes.brc39", "0x53514c69"},
		{"an upload, no path", fmt.Errorf("read header: %w", brc39.ErrBadHeader),
			"The file is not an encrypted walletsync backup", "", "", "read header"},
		{"no service manager", fmt.Errorf("control unix-systemv service: %w", ErrNoServiceManager),
			"This computer has no service manager", "walletsync agent", "", "unix-systemv"},
		{"a folder in the way", AtPath("/d/backups", &fs.PathError{Op: "mkdir", Path: "/d/backups", Err: syscall.ENOTDIR}),
			"/d/backups is in the way", "", "/d/backups", "mkdir"},
		{"unknown", errors.New("something odd"), "something odd", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ex := Explain(tt.err)
			if !strings.HasPrefix(ex.Message, tt.message) || !strings.Contains(ex.Hint, tt.hint) || ex.Path != tt.path || !strings.Contains(ex.Detail, tt.detailsWord) {
				t.Errorf("Explain(%v) = %+v", tt.err, ex)
			}
			if tt.detailsWord != "" && strings.Contains(ex.Message, tt.detailsWord) {
				t.Errorf("the message %q repeats the technical %q", ex.Message, tt.detailsWord)
			}
		})
	}
}
