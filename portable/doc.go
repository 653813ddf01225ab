// Package portable reads and writes walletsync's portable backups: BRC-38 documents (one
// user's wallet as canonical JSON) and BRC-39 files (a BRC-38 document encrypted with a
// password), byte-compatible with @bsv/wallet-toolbox 2.1.26. The formats are described in
// ../shared/reference/brc38-brc39.md.
//
// This file set is the foundation the codec and the import path stand on:
//
//   - header.go: the BRC-39 header, parsed and written with every rejection rule the
//     toolbox applies, each a distinct typed error.
//   - kdf.go: the password KDF (NFC, Argon2id) with export minimums and import caps that are
//     checked before Argon2 runs.
//   - gcmstream.go, ghash.go: AES-256-GCM with a 32-byte nonce as a stream, so neither
//     direction ever holds a whole document in memory.
//   - envelope.go: Encrypt and Decrypt, the BRC-39 file as a whole.
//   - jsjson.go, collation.go: the JavaScript rules the canonical JSON depends on (string and
//     number serialisation, object key order, String.prototype.localeCompare).
//
// On it stand the codec (encode.go, decode.go), the export (export.go) and the import:
//
//   - import.go: Verify, Preview and Import, a backup into a wallet in steps that each
//     leave the wallet untouched or resumable, refusals as typed errors.
//   - staging.go: the private staging folder: nameless plaintext files and staging
//     databases.
//   - store.go: Store, what the import needs of a wallet file (localstore implements it).
//
// Memory is bounded in every streaming path: a fixed 32 KiB buffer, the 16-byte tag
// look-behind and a 4 KiB GHASH table, whatever the size of the document.
package portable
