#!/usr/bin/env bash
# Runs golangci-lint with .golangci.yml over the module and exits non-zero on any finding.
# The linter is pinned and installed into .cache/bin (gitignored) on first use, or when the
# binary there is of another version; it stays out of go.mod, which lists only what
# walletsync links.
set -euo pipefail
cd "$(dirname "$0")/.."

version=v2.15.0
bin="$PWD/.cache/bin"
lint="$bin/golangci-lint"
if ! "$lint" version 2>/dev/null | grep -q "version ${version#v} "; then
  echo "lint: installing golangci-lint $version into $bin"
  GOBIN="$bin" go install "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$version"
fi
exec "$lint" run ./...
