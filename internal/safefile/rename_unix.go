//go:build unix && !linux

package safefile

// renameNoReplace uses a hard link, which fails with EEXIST where to exists.
func renameNoReplace(from, to string) error { return linkNoReplace(from, to) }
