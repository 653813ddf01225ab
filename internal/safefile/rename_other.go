//go:build !linux

package safefile

// RenameNoReplace renames from to to, a file or a folder, and refuses (fs.ErrExist) when
// to exists. Outside Linux the check comes just before the rename, so a path created in
// between by another process can still be replaced.
func RenameNoReplace(from, to string) error { return renameChecked(from, to) }
