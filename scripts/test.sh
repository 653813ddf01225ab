#!/usr/bin/env bash
# The README's test command: installs what the tests need, then vets and tests everything
# with the race detector. CI runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/setup.sh

echo "== go vet"
go vet ./...

echo "== go test -race"
go test -race -count=1 -timeout 20m ./...
