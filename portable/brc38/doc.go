// Package brc38 writes and reads BRC-38 documents: one user's wallet as canonical JSON,
// byte-identical to what @bsv/wallet-toolbox 2.1.26's exportBRC38Json writes (reference:
// ../shared/reference/brc38-brc39.md).
//
//   - brc38.go: the document's fixed values, its tables and the columns' canonical order.
//   - encode.go: Encode, a wallet view into the document, with the toolbox's back-fills.
//   - decode.go, jsonscan.go: Decode, a streaming validator and row reader with limits,
//     refusals as a *DocumentError.
//   - jsjson.go, collation.go: the JavaScript rules the canonical JSON depends on (object
//     key order in UTF-16 code units, String.prototype.localeCompare).
//
// Both directions stream: Encode reads the view page by page, Decode hands each row to its
// caller as it is read and keeps about 8 bytes per row to check references.
package brc38
