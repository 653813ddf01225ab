// Package brc39 reads and writes BRC-39 files: a BRC-38 document encrypted under a password
// with Argon2id and AES-256-GCM, byte-compatible with @bsv/wallet-toolbox 2.1.26 (reference:
// ../shared/reference/brc38-brc39.md). The plaintext is opaque here: the envelope neither
// parses nor checks the document it carries, which is package brc38's work.
//
//   - header.go: the header, parsed and written with every rejection rule the toolbox
//     applies, each a distinct typed error (errors.go).
//   - kdf.go: the password KDF (NFC, Argon2id) with export minimums and import caps that are
//     checked before Argon2 runs.
//   - gcmstream.go, ghash.go: AES-256-GCM with a 32-byte nonce as a stream, so neither
//     direction ever holds a whole document in memory.
//   - envelope.go: Encrypt and Decrypt, the file as a whole.
//
// Memory is bounded in both directions: a fixed 32 KiB buffer, the 16-byte tag look-behind
// and a 4 KiB GHASH table, whatever the size of the document.
package brc39
