// Package wallet is walletsync's shared vocabulary: the wallet-toolbox tables and their
// columns, the fixed sync order, chain names, rows and their value formats, the JavaScript
// JSON primitives that write strings and numbers as the toolbox does (for BRC-40 messages
// and BRC-38 documents alike), the page and cursor types of the snapshot reader, and the
// typed errors every room returns.
//
// Every other package (localstore, scheduler, remote, portable, agent) imports this one and
// none of them defines these types again, so that localstore, remote and portable never
// import each other to borrow a type. The package has no dependencies beyond the standard
// library and performs no I/O.
package wallet
