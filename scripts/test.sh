#!/usr/bin/env bash
# The README's test command, in two tiers:
#
#   ./scripts/test.sh         the full run, exactly what CI runs (.ci/run): installs what the
#                             tests need, checks formatting, vets, lints, cross-builds the
#                             shipped binary, runs every test without the race detector and
#                             then the concurrent packages under it, the dashboard's Chromium
#                             tests, every fuzz target for a fixed number of inputs, and the
#                             desktop window's build and smoke test. It skips nothing.
#   ./scripts/test.sh quick   the tier to run while working: gofmt, go vet and `go test -short`,
#                             with nothing but Go (no apt, no npm, no root). The harnesses of what
#                             it cannot count on (testkit/tier) skip their tests, and it ends
#                             with a list of what it left out and why.
#
# Every stage is deterministic: no stage waits on a wall-clock budget (see fuzz below), and a
# test that passes only when the machine is slow, or only when it is fast, is a bug to fix.
set -euo pipefail
cd "$(dirname "$0")/.."

tier=${1:-full}
case "$tier" in
quick | full) ;;
*)
  echo "usage: $0 [quick]" >&2
  exit 2
  ;;
esac

# stage prints a stage's title with the seconds since the run began, so that a CI log says
# where its time went (CI must stay under 30 minutes; quick, under two).
stage() { echo "== $* (at ${SECONDS}s)"; }

# checks are the stages both tiers begin with: cheap, and the commonest failures.
checks() {
  stage "gofmt, go vet"
  unformatted=$(gofmt -l $(git ls-files '*.go'))
  if [ -n "$unformatted" ]; then echo "not gofmt'ed: $unformatted"; exit 1; fi
  go vet ./...
}

if [ "$tier" = quick ]; then
  checks
  # -v only so that the skips can be listed: the log goes to a file, and the terminal gets one
  # line per package, with the whole output of a package that failed. Without -v, go test
  # prints a package's output in one piece once it ends, so a package's lines stay together.
  stage "go test -short"
  mkdir -p artifacts
  log=artifacts/quick-test.log
  status=0
  go test -short -count=1 -v -timeout 10m ./... >"$log" 2>&1 || status=$?
  awk -v marker="full tier only: needs " '
    /^(ok  |FAIL|\?   )\t/ {
      if ($1 == "FAIL") { printf "%s", block }
      print
      for (why in skipped) { left[$2 "\t" why] += skipped[why] }
      delete skipped
      block = ""
      next
    }
    index($0, marker) {
      why = substr($0, index($0, marker) + length(marker))
      sub(/ \(scripts\/test\.sh runs it\)$/, "", why)
      skipped[why]++
    }
    !/^(=== (RUN|PAUSE|CONT|NAME)|[ \t]*--- (PASS|SKIP):)/ { block = block $0 "\n" }
    END {
      print ""
      print "The quick tier left out (scripts/test.sh runs all of it):"
      for (k in left) { split(k, f, "\t"); printf "  %-32s %4d skipped: need %s\n", f[1], left[k], f[2] | "sort" }
      close("sort")
      print "  and the race detector, the cross-builds, 240 of syncer'"'"'s 300 fault schedules, the fuzz"
      print "  targets beyond their seed corpora, and the desktop window'"'"'s build and smoke test."
    }' "$log"
  echo "(the whole output: $log)"
  stage "done"
  exit "$status"
fi

./scripts/setup.sh
checks
if [ -x scripts/lint.sh ]; then
  stage "lint"
  scripts/lint.sh
fi

# The shipped binary builds for every platform it claims, without cgo (its SQLite is pure Go).
# The desktop window is cross-built for Windows too: Wails reaches WebView2 there through
# syscalls, not cgo. On Linux and macOS the window needs cgo (GTK/WebKitGTK, Cocoa), so only
# this machine's own build of it is checked, by scripts/desktop.sh below.
stage "cross-builds"
for target in windows/amd64 darwin/amd64 darwin/arm64 linux/arm64 linux/amd64; do
  echo "   $target"
  CGO_ENABLED=0 GOOS=${target%/*} GOARCH=${target#*/} go build -o /dev/null .
done
echo "   windows/amd64, desktop window"
CGO_ENABLED=0 GOOS=windows GOARCH=amd64 go build -tags desktop,production -o /dev/null .

# Every test without the race detector, at the machine's own speed, where a test that holds
# only because the race detector slows the code down fails. syncer's generated fault
# schedules run here in the full number the issue asks for (300; see wantSchedules), since
# without the race detector each costs little. Three packages at a time on two cores: the
# interop tests spend most of their time waiting for the Node peer (a toolbox server
# committing rows one by one), not on the CPU. The longest packages are named first, so that
# they start first and the stage does not end waiting on one of them alone. The dashboard
# has a stage of its own below.
stage "go test"
longest=(syncer remote/serve remote/toolbox portable localstore agent bundle cmd/walletsync-bench remote/wire cli)
pkgs=()
for p in "${longest[@]}"; do pkgs+=("walletsync/$p"); done
for p in $(go list ./... | grep -v '^walletsync/frontend$'); do
  [[ " ${pkgs[*]} " == *" $p "* ]] || pkgs+=("$p")
done
go test -count=1 -p 3 -timeout 20m "${pkgs[@]}"

# The race detector, over the packages where goroutines of walletsync's own meet:
#   agent           the daemon: scheduler loop, jobs, event stream, drills
#   agent/api       the HTTP server, its event streams and login codes
#   scheduler       the access queue and the page budget, shared by every task
#   syncer          the prefetching reader beside the committing writer (brc40.go)
#   localstore      the WAL checkpointer goroutine and the one-view slot
#   pgstore         the reaper beside the sessions it ends
#   wallet          the view guard (a read against the view's end)
#   portable        export's verification beside the writer
#   remote/auth     sessions and handshakes shared by concurrent requests
#   remote/wire     the client's shared connection state and the server's views
#   remote/toolbox  the client's shared state
#   remote/serve    several listeners and their metrics, over one store
#   desktop         the tray's event follower
# Left out, as they start no goroutine and share nothing between them: bundle, cli,
# cli/command, build, internal/*; the lab (cmd/walletsync-bench), which is never shipped; and
# testkit/*, whose concurrent harnesses (httpproxy, the toolbox peer) run inside the raced
# packages' tests above. syncer runs 60 fault schedules here (raceSchedules): each costs
# half a second of CPU under the race detector.
#
# The race run is -short: every test has just run without it, and what -short leaves out
# is what waits on another process (the toolbox peer on Node, kill loops, built binaries),
# where the race detector would mostly watch walletsync wait, at several times the CPU: the
# whole suite under it took most of the 30 minutes CI has. The goroutines that meet in
# walletsync's own code meet in the in-process tests, which -short keeps. PostgreSQL is the
# exception: pgstore's reaper, shared views and advisory locks are concurrency of its own
# against a real server, so pgstore's tests run whole under the race detector.
stage "go test -race"
raced=(syncer remote/serve remote/toolbox portable localstore agent remote/wire scheduler remote/auth wallet desktop agent/api)
go test -race -short -count=1 -p 3 -timeout 20m "${raced[@]/#/walletsync/}"
go test -race -count=1 -timeout 10m walletsync/pgstore

# The dashboard's end-to-end tests drive Chromium against a real agent. They run without
# the race detector: it makes the agent's syncs and Argon2 several times slower on a
# two-core machine while finding nothing the agent's own -race tests above do not; what
# they test is the page. Their screenshots are kept as artifacts of the run.
stage "go test ./frontend (headless Chromium)"
mkdir -p artifacts/e2e
WALLETSYNC_ARTIFACTS="$PWD/artifacts/e2e" go test -count=1 -timeout 10m ./frontend

# Each decoder of bytes from outside (backup files, sync chunks and sync maps, cursors, BRC-104
# messages, headers, nonces, request bodies and key files) is fuzzed on every run, on top of
# its seed corpus that go test ran above. The budget is a number of inputs, not a duration:
# Go 1.26's fuzz coordinator can fail with "context deadline exceeded" when -fuzztime's
# duration ends while a worker is busy under load (go.dev/issue/75804), so a timed stage
# failed now and then without a reproducer. Each count was sized to take about 1-3 s on the
# two-core CI machine under load (the inputs of the baseline coverage count too; the decoders
# that open a wallet or run Argon2 manage a few inputs a second); a stage fails only when go
# test writes a failing input to testdata/fuzz. -short keeps a package's TestMain from
# starting PostgreSQL (testkit/postgres.Main), which no fuzz target uses. WALLETSYNC_FUZZSCALE
# multiplies every count, for a longer search by hand.
fuzzscale=${WALLETSYNC_FUZZSCALE:-1}
#      package          target               inputs
fuzzes="./portable/brc39 FuzzParseHeader      3000
        ./portable/brc39 FuzzDecrypt          10000
        ./portable/brc38 FuzzDecodeBRC38      10
        ./portable       FuzzImport           6
        ./brc40          FuzzDecodeSyncChunk  3000
        ./brc40          FuzzSyncMap          50000
        ./wallet         FuzzParseCursor      30000
        ./localstore     FuzzParseProcLock    10000
        ./remote/auth    FuzzCanonicalJSON    5000
        ./remote/auth    FuzzParseHandshake   20000
        ./remote/auth    FuzzServerRequest    1500
        ./remote/auth    FuzzClientVerify     3000
        ./remote/auth    FuzzVerifyNonce      15000
        ./remote/auth    FuzzParseKeyFile     20000
        ./remote/auth    FuzzDecodeUTF8       6000
        ./remote/wire    FuzzDecodeFrame      10
        ./remote/wire    FuzzDecodeError      10000
        ./remote/toolbox FuzzClientAnswers    4000
        ./bundle         FuzzDecodeManifest   4000
        ./remote/toolbox FuzzParseRequest     6000
        ./remote/toolbox FuzzParseResponse    5000
        ./remote/toolbox FuzzServer_Call      4000"
while read -r pkg target inputs; do
  n=$((inputs * fuzzscale))
  stage "go test -fuzz $target ($pkg, ${n} inputs)"
  go test -short -run '^$' -fuzz "^$target\$" -fuzztime "${n}x" -fuzzminimizetime 1000x "$pkg" </dev/null
done <<<"$fuzzes"

stage "desktop build and smoke test"
./scripts/desktop.sh
stage "done"
