// Command icon draws walletsync's icons and writes every file the desktop build packs:
// the 1024x1024 build/appicon.png (from which `wails build` makes the macOS .icns),
// build/windows/icon.ico, the Linux hicolor theme icons under build/linux/icons, and the
// tray icons under build/tray (PNG for Linux and macOS, ICO for Windows), in a good, an
// attention and an alert variant.
//
// Run it from the module root when the design changes: go run ./build/icon
//
// The icon is a white shield with a check mark on a teal rounded square; the attention
// variant is amber with an exclamation mark, the alert variant red with one. Every size is drawn from the shapes, not
// scaled from the large one, so that the small tray sizes stay sharp.
package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"log"
	"math"
	"os"
	"path/filepath"
)

// variant is one colour scheme and mark.
type variant struct {
	top, bottom color.RGBA // the background gradient
	mark        func(x, y float64) bool
}

var (
	good      = variant{top: rgb(0x14, 0x8f, 0x91), bottom: rgb(0x0b, 0x5c, 0x6b), mark: check}
	attention = variant{top: rgb(0xe8, 0xa3, 0x1c), bottom: rgb(0xc2, 0x6d, 0x06), mark: exclamation}
	// alert is the tray's red: a destination is late or failing.
	alert = variant{top: rgb(0xd9, 0x3a, 0x2b), bottom: rgb(0x9e, 0x1b, 0x12), mark: exclamation}
)

func main() {
	if err := run("build"); err != nil {
		log.Fatal(err)
	}
}

func run(dir string) error {
	if err := writePNG(filepath.Join(dir, "appicon.png"), draw(1024, good)); err != nil {
		return err
	}
	if err := writeICO(filepath.Join(dir, "windows", "icon.ico"), good, 16, 24, 32, 48, 64, 128, 256); err != nil {
		return err
	}
	for _, n := range []int{32, 48, 64, 128, 256, 512} {
		path := filepath.Join(dir, "linux", "icons", "hicolor", fmt.Sprintf("%dx%d", n, n), "apps", "walletsync.png")
		if err := writePNG(path, draw(n, good)); err != nil {
			return err
		}
	}
	for name, v := range map[string]variant{"ok": good, "attention": attention, "alert": alert} {
		if err := writePNG(filepath.Join(dir, "tray", name+".png"), draw(64, v)); err != nil {
			return err
		}
		if err := writeICO(filepath.Join(dir, "tray", name+".ico"), v, 16, 24, 32, 48); err != nil {
			return err
		}
	}
	return nil
}

// draw renders the icon at n x n pixels, 4 x 4 samples a pixel.
func draw(n int, v variant) *image.NRGBA {
	const ss = 4
	img := image.NewNRGBA(image.Rect(0, 0, n, n))
	for py := 0; py < n; py++ {
		for px := 0; px < n; px++ {
			var r, g, b, a float64
			for sy := 0; sy < ss; sy++ {
				for sx := 0; sx < ss; sx++ {
					x := (float64(px) + (float64(sx)+0.5)/ss) / float64(n)
					y := (float64(py) + (float64(sy)+0.5)/ss) / float64(n)
					c, ok := shade(x, y, v)
					if !ok {
						continue
					}
					r, g, b, a = r+float64(c.R), g+float64(c.G), b+float64(c.B), a+1
				}
			}
			if a == 0 {
				continue
			}
			img.SetNRGBA(px, py, color.NRGBA{R: uint8(r / a), G: uint8(g / a), B: uint8(b / a), A: uint8(255 * a / ss / ss)})
		}
	}
	return img
}

// shade returns the colour at (x, y) in the unit square, and whether the icon covers it.
func shade(x, y float64, v variant) (color.RGBA, bool) {
	if !roundedSquare(x, y) {
		return color.RGBA{}, false
	}
	bg := mix(v.top, v.bottom, (y-0.06)/0.88)
	if shield(x, y) && !v.mark(x, y) {
		return rgb(0xff, 0xff, 0xff), true
	}
	return bg, true
}

// roundedSquare is the background: inset 6% (the platforms' icon grids leave a margin),
// corners of radius 20%.
func roundedSquare(x, y float64) bool {
	const lo, hi, r = 0.06, 0.94, 0.20
	cx := math.Max(lo+r, math.Min(x, hi-r))
	cy := math.Max(lo+r, math.Min(y, hi-r))
	return x >= lo && x <= hi && y >= lo && y <= hi && math.Hypot(x-cx, y-cy) <= r
}

// shieldOutline is the shield's polygon: a flat top with rounded shoulders, straight
// sides, and a curve down to the point.
var shieldOutline = func() [][2]float64 {
	var right [][2]float64
	right = append(right, [2]float64{0.5, 0.22}, [2]float64{0.66, 0.22})
	for i := 0; i <= 8; i++ { // the shoulder
		t := float64(i) / 8 * math.Pi / 2
		right = append(right, [2]float64{0.66 + 0.06*math.Sin(t), 0.28 - 0.06*math.Cos(t)})
	}
	for i := 0; i <= 24; i++ { // the side and the curve to the point
		t := float64(i) / 24
		p0, p1, p2 := [2]float64{0.72, 0.48}, [2]float64{0.72, 0.70}, [2]float64{0.5, 0.82}
		right = append(right, [2]float64{
			(1-t)*(1-t)*p0[0] + 2*(1-t)*t*p1[0] + t*t*p2[0],
			(1-t)*(1-t)*p0[1] + 2*(1-t)*t*p1[1] + t*t*p2[1],
		})
	}
	out := append([][2]float64(nil), right...)
	for i := len(right) - 2; i > 0; i-- { // the mirror image, for the left half
		out = append(out, [2]float64{1 - right[i][0], right[i][1]})
	}
	return out
}()

func shield(x, y float64) bool { return inPolygon(x, y, shieldOutline) }

// check is the check mark cut out of the shield.
func check(x, y float64) bool {
	const w = 0.05
	return nearSegment(x, y, 0.395, 0.515, 0.475, 0.595, w) || nearSegment(x, y, 0.475, 0.595, 0.615, 0.425, w)
}

// exclamation is the attention mark cut out of the shield.
func exclamation(x, y float64) bool {
	return nearSegment(x, y, 0.5, 0.34, 0.5, 0.55, 0.05) || math.Hypot(x-0.5, y-0.65) <= 0.045
}

func inPolygon(x, y float64, poly [][2]float64) bool {
	in := false
	for i, j := 0, len(poly)-1; i < len(poly); j, i = i, i+1 {
		a, b := poly[i], poly[j]
		if (a[1] > y) != (b[1] > y) && x < (b[0]-a[0])*(y-a[1])/(b[1]-a[1])+a[0] {
			in = !in
		}
	}
	return in
}

// nearSegment reports whether (x, y) is within w/2 of the segment (x1, y1)-(x2, y2).
func nearSegment(x, y, x1, y1, x2, y2, w float64) bool {
	dx, dy := x2-x1, y2-y1
	t := math.Max(0, math.Min(1, ((x-x1)*dx+(y-y1)*dy)/(dx*dx+dy*dy)))
	return math.Hypot(x-(x1+t*dx), y-(y1+t*dy)) <= w/2
}

func rgb(r, g, b uint8) color.RGBA { return color.RGBA{R: r, G: g, B: b, A: 255} }

func mix(a, b color.RGBA, t float64) color.RGBA {
	t = math.Max(0, math.Min(1, t))
	f := func(p, q uint8) uint8 { return uint8(float64(p) + (float64(q)-float64(p))*t + 0.5) }
	return color.RGBA{R: f(a.R, b.R), G: f(a.G, b.G), B: f(a.B, b.B), A: 255}
}

func encodePNG(img image.Image) ([]byte, error) {
	var b bytes.Buffer
	err := png.Encode(&b, img)
	return b.Bytes(), err
}

func writePNG(path string, img image.Image) error {
	b, err := encodePNG(img)
	if err != nil {
		return err
	}
	return write(path, b)
}

// writeICO writes an ICO file holding v at each size, PNG-compressed (valid in ICO files
// since Windows Vista, and what winres, which `wails build` uses, reads).
func writeICO(path string, v variant, sizes ...int) error {
	var images [][]byte
	for _, n := range sizes {
		b, err := encodePNG(draw(n, v))
		if err != nil {
			return err
		}
		images = append(images, b)
	}
	var out bytes.Buffer
	le := binary.LittleEndian
	out.Write(le.AppendUint16(le.AppendUint16(le.AppendUint16(nil, 0), 1), uint16(len(sizes)))) // ICONDIR: reserved, type 1 (icon), count
	offset := 6 + 16*len(sizes)
	for i, n := range sizes {
		side := byte(n)
		if n >= 256 {
			side = 0 // 0 means 256
		}
		entry := []byte{side, side, 0, 0}  // width, height, palette size, reserved
		entry = le.AppendUint16(entry, 1)  // colour planes
		entry = le.AppendUint16(entry, 32) // bits per pixel
		entry = le.AppendUint32(entry, uint32(len(images[i])))
		entry = le.AppendUint32(entry, uint32(offset))
		out.Write(entry)
		offset += len(images[i])
	}
	for _, b := range images {
		out.Write(b)
	}
	return write(path, out.Bytes())
}

func write(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
