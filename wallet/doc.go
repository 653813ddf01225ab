// Package wallet is walletsync's shared vocabulary: the wallet-toolbox tables and their
// columns, the fixed sync order, chain names, rows and their value formats, the JavaScript
// JSON primitives that write strings and numbers as the toolbox does (for BRC-40 messages
// and BRC-38 documents alike), the page and cursor types of the snapshot reader, the
// contracts of a page sync (Source, View, Destination, Batch, Checkpoint, Ack), and the
// typed errors every room returns.
//
// The BRC-40 protocol itself (its messages, sync state, producer, consumer and the merge
// rules the storage dialects share) is package brc40, which stands on this one.
//
// Every other package (brc40, localstore, pgstore, scheduler, remote, portable, agent)
// imports this one and none of them defines these types again, so that localstore, remote
// and portable never import each other to borrow a type. The package imports nothing of
// walletsync, has no dependencies beyond the standard library and performs no I/O.
package wallet
