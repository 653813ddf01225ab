#!/usr/bin/env bash
# The desktop window's build and smoke test, as CI runs them:
#
#   1. installs the system packages the Wails build and the smoke test need (GTK 3 and
#      WebKitGTK 4.1 headers, Xvfb, xwininfo, xdotool, ImageMagick, a font), skipping those
#      present;
#   2. builds the window binary with cgo: bin/walletsync-desktop;
#   3. runs the smoke test (desktop_smoke_test.go, build tag desktopsmoke) under Xvfb: it
#      starts the binary with a fresh data folder, waits for the window, checks that the
#      dashboard rendered the overview the agent serves and that the Restore page's Browse
#      button opens the native dialog, and saves screenshots and the binary's log under
#      artifacts/desktop/.
#
# It exits non-zero when any step fails, and prints how long each took.
#
# Why WebKitGTK 4.1 and the webkit2_41 tag: the window reaches the agent through the Wails
# asset server (the App's API proxy, desktop/proxy.go), and only with webkit2_36
# or later does that server see request methods, headers and status codes, and only with
# webkit2_40 or later request bodies; without them every POST from the dashboard would
# arrive as a bodiless GET.
# webkit2gtk-4.0 is also gone from newer distributions (Ubuntu 24.04 ships only 4.1).
set -euo pipefail
cd "$(dirname "$0")/.."

tags="desktop,production,webkit2_41"
t0=$(date +%s)

. scripts/packages.sh
ensure_packages libgtk-3-dev libwebkit2gtk-4.1-dev xvfb xauth x11-utils xdotool imagemagick fonts-dejavu-core
t1=$(date +%s)

echo "== go build -tags $tags -o bin/walletsync-desktop ."
go build -tags "$tags" -o bin/walletsync-desktop .
t2=$(date +%s)

echo "== desktop smoke test under Xvfb"
mkdir -p artifacts/desktop
WALLETSYNC_DESKTOP_BIN="$PWD/bin/walletsync-desktop" WALLETSYNC_ARTIFACTS="$PWD/artifacts/desktop" \
  xvfb-run -a -s "-screen 0 1280x800x24" \
  go test -tags desktopsmoke -run '^TestDesktopSmoke' -count=1 -v .
t3=$(date +%s)

echo "desktop: packages $((t1 - t0)) s, build $((t2 - t1)) s, smoke test $((t3 - t2)) s, total $((t3 - t0)) s"
