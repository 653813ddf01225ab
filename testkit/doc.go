// Package testkit is the home of walletsync's test harnesses; only tests and the lab
// (cmd/walletsync-bench) import it. This package itself holds SeededWallet, the per-process
// cache of seeded fixture wallets. The harnesses, each named for its job:
//
//	testkit/backuptest    the fixtures of the backup file tests: seeded and toolbox-made
//	                      wallets, the toolbox's own BRC-38 export, canonical documents
//	testkit/compare       do two stores hold the same wallet: logically, whatever ids the
//	                      rows got (Read, Diff, SameWallet), or table by table in the file
//	                      (Digests, Same)
//	testkit/crash         this test binary run again as child processes: killed by SIGKILL
//	                      at a named durable boundary (Run), or started together to race
//	                      on one file (Together)
//	testkit/httpproxy     proxies on 127.0.0.1 that break scripted requests (Proxy) or move
//	                      a client to another server after every answer (Switcher)
//	testkit/importtest    a wallet left with an unfinished import merge (HalfMerge)
//	testkit/jsoracle      Node.js as the oracle of JavaScript's JSON and string order
//	testkit/postgres      a throwaway PostgreSQL cluster per test package and a database
//	                      per test; the lab starts or attaches its servers through it too
//	testkit/providertest  the one conformance suite every sync provider passes
//	testkit/servetest     a walletsync serve on 127.0.0.1 that records every request path
//	testkit/testfs        real tmpfs mounts: a full disk, a read-only one
//	testkit/tier          the quick tier's one switch: under -short, Full skips a test
//	                      that needs more than Go, and says what it needs
//	testkit/toolboxpeer   @bsv/wallet-toolbox on Node, the independent implementation
//	                      every compatibility claim is tested against
//	testkit/walletsynctest agent data folders, a recording notifier and the walletsync
//	                      binaries, for the tests of the command line and the desktop shell
//
// A harness that needs something the machine lacks (Node, PostgreSQL, mount rights) fails
// the test and says how to get it. It skips only in the quick tier (go test -short, through
// testkit/tier), which says what it left out; the full tier never skips.
package testkit
