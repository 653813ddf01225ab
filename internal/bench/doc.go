// Package bench measures walletsync: keyset paging (store), sync against the raw SQLite
// floor (sync), foreground latency beside a background copy (scheduler), and BRC-39
// export and restore against @bsv/wallet-toolbox's (portable). Each is a command of the
// command line (`walletsync bench ...`), which dispatches to the Run functions here.
//
// Benchmarks print ratios against a baseline measured in the same run, because the machines
// they run on are noisy: an absolute time means little, a ratio to the floor means a lot.
// Each measured phase runs in a fresh child process, the walletsync binary itself with a
// hidden `bench ...-child` command, so that its peak RSS is its own.
package bench
