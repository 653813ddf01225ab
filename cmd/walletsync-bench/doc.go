// Command walletsync-bench is the lab: it measures walletsync: keyset paging (store), sync against the raw SQLite
// floor (sync), foreground latency beside a background copy (scheduler), BRC-39 export and
// restore against @bsv/wallet-toolbox's (portable), walletsync serve against the local copy
// and against the toolbox's StorageServer (serve), and walletsync serve under many clients
// at once (load: a load test that stops by itself and checks every client's data). Each is
// a command of this binary (`go run ./cmd/walletsync-bench NAME`). It is never shipped:
// it links the test harnesses (a throwaway PostgreSQL cluster, the toolbox peer), which
// only build on Linux.
//
// Benchmarks print ratios against a baseline measured in the same run, because the machines
// they run on are noisy: an absolute time means little, a ratio to the floor means a lot.
// Each measured phase runs in a fresh child process, this binary itself with a hidden
// `...-child` command, so that its peak RSS is its own.
package main
