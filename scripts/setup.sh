#!/usr/bin/env bash
# Installs everything walletsync's tests need on a fresh machine (Go, gcc, Node and npm are
# assumed present): the system packages, then the @bsv/wallet-toolbox peer in interop/.
# Safe to run again; each step is skipped when already done.
set -euo pipefail
cd "$(dirname "$0")/.."

. scripts/packages.sh

# better-sqlite3 (the toolbox's SQLite driver) compiles its native module with node-gyp,
# which needs python3, make and a C++ compiler. The dashboard's end-to-end tests drive
# Debian's Chromium (headless, through chromedp), with a font so that pages render text.
# pgstore's tests start a throwaway cluster of the PostgreSQL server binaries
# (testkit/postgres) and fail without them.
packages=(build-essential python3 chromium fonts-liberation postgresql)
ensure_packages "${packages[@]}"

# The toolbox peer, pinned by interop/package-lock.json. npm ci takes a minute or two
# (it compiles better-sqlite3), so it only runs when the lock file changed.
stamp=interop/node_modules/.walletsync-lock-sha256
want=$(sha256sum interop/package-lock.json | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "setup: installing the @bsv/wallet-toolbox peer (npm ci in interop/)"
  (cd interop && npm ci --no-audit --no-fund --loglevel=error)
  echo "$want" > "$stamp"
fi
