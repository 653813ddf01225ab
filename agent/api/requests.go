package api

import "walletsync/wallet"

// BundleRequest is the body of POST /api/v1/bundles/preview and /api/v1/bundles/restore.
type BundleRequest struct {
	// Destination and Name name one bundle of a bundle folder destination; Path names a
	// bundle folder on this machine instead.
	Destination string `json:"destination,omitempty"`
	Name        string `json:"name,omitempty"`
	Path        string `json:"path,omitempty"`
	// Wallet is the configured wallet a restore replaces (the only one when empty).
	Wallet string `json:"wallet,omitempty"`
	// Confirm must be true for a restore: the person saw the preview and said yes.
	Confirm bool `json:"confirm,omitempty"`
}

// Upload is the body of POST /api/v1/import/upload's answer.
type Upload struct {
	Upload string `json:"upload"` // the id an import request names
	Bytes  int64  `json:"bytes"`
}

// ImportRequest is the body of POST /api/v1/import/preview and /api/v1/import.
type ImportRequest struct {
	// Upload names an uploaded file; Path a file on this machine (the desktop window's open
	// dialog); Destination a backup wallet file destination, whose copy of the wallet is
	// read as a document (see sourceDocument). Exactly one is set.
	Upload      string `json:"upload,omitempty"`
	Path        string `json:"path,omitempty"`
	Destination string `json:"destination,omitempty"`
	// Password decrypts the file (none for a Destination, which is not encrypted).
	Password Secret `json:"password"`
	// Wallet is the configured wallet to import into (the only one when empty), or, with
	// mode restore, a new wallet file to build.
	Wallet string            `json:"wallet,omitempty"`
	Mode   wallet.ImportMode `json:"mode,omitempty"`
	// Confirm must be true for an import: the person saw the preview and said yes.
	Confirm bool `json:"confirm,omitempty"`
	// AllowOtherIdentity lets a merge bring another identity than the wallet's into it (the
	// preview's otherIdentity); without it such an import is refused.
	AllowOtherIdentity bool `json:"allowOtherIdentity,omitempty"`
}

// AbandonRequest is the body of POST /api/v1/import/abandon: the configured wallet whose
// unfinished import to take back (the only one when empty).
type AbandonRequest struct {
	Wallet string `json:"wallet,omitempty"`
}

// VerifyRequest is the body of POST /api/v1/destinations/{id}/backups/verify.
type VerifyRequest struct {
	Name string `json:"name"`
}

// ExportRequest asks for one BRC-39 file of one identity, written where the person chose.
type ExportRequest struct {
	Wallet      string `json:"wallet"` // the wallet's path; the only wallet when empty
	IdentityKey string `json:"identityKey"`
	Path        string `json:"path"`
	Password    Secret `json:"password"`
	// Overwrite asks to replace a file at Path; only a backup file is ever replaced.
	Overwrite bool `json:"overwrite"`
}

// SettingsRequest is the body of PUT /api/v1/settings: what the Settings page edits besides the
// backup password (which goes to the secrets API) and the service.
type SettingsRequest struct {
	Retention Retention `json:"retention"`
	Drill     Schedule  `json:"drill"`
	LogLevel  LogLevel  `json:"logLevel"`
}

// PauseRequest is the body of a pause: for a duration ("1h", "8h"), or, empty, until resumed.
type PauseRequest struct {
	For Duration `json:"for,omitzero"`
}

// WalletReplaceRequest is the body of POST /api/v1/wallets/replace: protect the wallet
// file New in place of Old (a restored wallet made the one in use).
type WalletReplaceRequest struct {
	Old string `json:"old"`
	New string `json:"new"`
}

// ServerRestoreRequest is the body of POST /api/v1/storage-servers/restore/preview (URL,
// Signer, Wallet) and of POST /api/v1/storage-servers/restore (Preview, Confirm).
type ServerRestoreRequest struct {
	URL    string       `json:"url,omitempty"`
	Signer ServerSigner `json:"signer"`
	// Wallet is the configured wallet to restore into; the only one when empty.
	Wallet string `json:"wallet,omitempty"`
	// Preview is the succeeded preview task whose staged rows the restore merges: exactly
	// what the person saw counted.
	Preview string `json:"preview,omitempty"`
	// Confirm must be true for the restore: the person saw the preview and said yes.
	Confirm bool `json:"confirm,omitempty"`
}

// ServerDestinationRequest is the body of POST /api/v1/storage-servers: a storage-server
// destination (Path its URL) and who signs for it.
type ServerDestinationRequest struct {
	Destination Destination  `json:"destination"`
	Signer      ServerSigner `json:"signer"`
}

// ServerSigner says who signs for a storage server, as the identity whose data it keeps.
// Exactly one field is set.
type ServerSigner struct {
	// KeyFile is a key file on this computer (64 hex digits and a newline, mode 0600): the
	// identity's root key. It is read once and kept in the agent's secrets, never in the
	// config.
	KeyFile string `json:"keyFile,omitempty"`
	// Key is a key file's content, as a page that cannot name a path sends it.
	Key Secret `json:"key,omitzero"`
	// WalletURL is the person's BRC-100 wallet (e.g. http://127.0.0.1:3321), which signs.
	WalletURL string `json:"walletURL,omitempty"`
	// Destination signs as a configured storage-server destination signs (its key in the
	// secrets, or its wallet).
	Destination string `json:"destination,omitempty"`
}

// ServerCheck is what the agent learned from a storage server that passed its check.
type ServerCheck struct {
	URL                string       `json:"url"`
	Banner             string       `json:"banner"`
	StorageIdentityKey string       `json:"storageIdentityKey"`
	StorageName        string       `json:"storageName"`
	Chain              wallet.Chain `json:"chain"`
	// IdentityKey is the signer's identity: the only one whose data the server gives out.
	IdentityKey string `json:"identityKey"`
}

// PasswordTestRequest is the body of RoutePasswordTest: the password the person typed.
type PasswordTestRequest struct {
	Password Secret `json:"password"`
}
