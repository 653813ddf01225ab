// Package portable exports a wallet as a portable backup and imports one into a wallet:
// BRC-38 documents (one user's wallet as canonical JSON, package brc38) and BRC-39 files (a
// BRC-38 document encrypted with a password, package brc39), byte-compatible with
// @bsv/wallet-toolbox 2.1.26. The formats are described in
// ../shared/reference/brc38-brc39.md.
//
// The formats live below this package so that each can be read, tested and fuzzed on its
// own; the envelope does not know the codec. This package is the workflow that joins them
// to files and wallets:
//
//   - export.go, destination.go: ExportBRC39 and ExportBRC38, a wallet into a file that
//     appears complete or not at all, and the rules for where one may be written.
//   - import.go: Verify, Preview and Import, a backup into a wallet in steps that each
//     leave the wallet untouched or resumable, refusals as typed errors.
//   - abandon.go: Abandon, an unfinished import taken back.
//   - staging.go: the private staging folder: nameless plaintext files and staging
//     databases.
//   - store.go: Store, what the import needs of a wallet file (localstore implements it).
//   - kdfgate.go: KDFGate, which admits Argon2id derivations one task at a time.
//
// Memory is bounded in every streaming path: brc39 encrypts and decrypts through a fixed
// 32 KiB buffer and brc38 streams a document row by row (its decoder keeps about 8 bytes per
// row to check references), whatever the size of the document.
package portable
