package auth

import (
	"encoding/hex"
	"testing"
)

func TestAppendVarint_Forms(t *testing.T) {
	for _, tc := range []struct {
		n    uint64
		want string
	}{
		{0, "00"},
		{0xfc, "fc"},
		{0xfd, "fdfd00"},
		{0xffff, "fdffff"},
		{0x10000, "fe00000100"},
		{0xffffffff, "feffffffff"},
		{0x100000000, "ff0000000001000000"},
		{varintAbsent, "ffffffffffffffffff"}, // TypeScript's writeVarIntNum(-1)
	} {
		if got := hex.EncodeToString(AppendVarint(nil, tc.n)); got != tc.want {
			t.Errorf("AppendVarint(%#x) = %s, want %s", tc.n, got, tc.want)
		}
	}
}
