package api

// PathPurpose says what a path the person typed is for, which decides what makes it right.
// The strings are a wire format.
type PathPurpose string

// Path purposes.
const (
	// PathBackupFolder: a backup folder destination, an existing folder walletsync can
	// write in, or a new one inside an existing folder (the first backup creates it).
	PathBackupFolder PathPurpose = "backup-folder"
	// PathBackupWallet: a backup wallet file destination, an existing wallet file, or a new
	// file in an existing folder walletsync can write in.
	PathBackupWallet PathPurpose = "backup-wallet"
	// PathBackupFile: a backup file to restore from, an existing file.
	PathBackupFile PathPurpose = "backup-file"
	// PathNewFile: a file to write (an export, a restore into a new wallet), not there yet,
	// in an existing folder walletsync can write in.
	PathNewFile PathPurpose = "new-file"
)

// PathCheckRequest is the body of POST /api/v1/paths/check.
type PathCheckRequest struct {
	Path    string      `json:"path"`
	Purpose PathPurpose `json:"purpose"`
	// Overwrite says that a new file may replace a backup file there (an export's box).
	Overwrite bool `json:"overwrite,omitempty"`
}

// PathCheck is the answer: whether the path will do for its purpose, and when it will not,
// which path is wrong (Path: the one typed, or its folder), why and what to do. Note says
// something worth knowing about a path that will do ("the folder will be created").
type PathCheck struct {
	OK      bool   `json:"ok"`
	Path    string `json:"path,omitempty"`
	Message string `json:"message,omitempty"`
	Hint    string `json:"hint,omitempty"`
	Note    string `json:"note,omitempty"`
}
