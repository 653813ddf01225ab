// Package build holds what the desktop build packs: icons and packaging files. Its Go side
// only embeds the icons that the programs show themselves (the tray's), so that they are
// kept here beside the others, drawn by build/icon, rather than copied next to their code.
package build

import "embed"

// TrayIcons are the tray's icons, drawn by build/icon: tray/ok, tray/attention and tray/alert, as PNG
// for the StatusNotifierItem and the macOS menu bar and as ICO for the Windows
// notification area.
//
//go:embed tray
var TrayIcons embed.FS
