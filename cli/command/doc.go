// Package command holds what every walletsync command shares, the command line's and the
// benchmarks' alike: flag sets whose errors are usage errors (exit code 2), the cancelled
// error of Ctrl-C (exit code 130), the report printed as text or JSON, the progress line,
// asking for a backup password, and opening wallet files for an export or an import. It
// is a package of its own so that cli and cmd/walletsync-bench share one definition
// without bench importing the command line that dispatches to it.
package command
