// Package wire is walletsync's paged wire: the Provider contract of package wallet
// (wallet.Source, wallet.View and wallet.Destination) over BRC-104 authenticated HTTP,
// between a walletsync agent (Provider) and a walletsync server (Handler over a Backend).
//
// It carries what the toolbox's JSON-RPC cannot: consistent views retained on the server,
// keyset pages with opaque cursors, page and checkpoint committed in one transaction,
// incremental sync from the change journal, and compressed binary frames.
//
// Every request is a POST under Prefix of one frame (frame.go), answered in the same
// encoding; a refusal is JSON that the client turns back into its typed error (errors.go):
//
//	capabilities   what the server speaks (JSON, read by Probe and on a Provider's first request)
//	describe       Source.Describe
//	view/open      Source.OpenView: a view retained on the server (views.go)
//	view/read      View.ReadPage
//	view/resume    View.Resume
//	view/close     View.Close
//	begin          Destination.Begin
//	checkpoint     Destination.Checkpoint
//	commit         Destination.Commit
//
// Capabilities are negotiated once per Provider: a newer server keeps answering the
// versions it advertises, and a client that finds no walletsync server (Probe,
// ErrNotWalletsync) can use the toolbox's wire instead.
package wire
