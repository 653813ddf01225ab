package api

import (
	"errors"
	"testing"

	"walletsync/wallet"
)

// TestCheckNewPassword_CountsAsTheDashboard counts characters as a JavaScript string's
// length does, so that a password the dashboard accepts is accepted everywhere.
func TestCheckNewPassword_CountsAsTheDashboard(t *testing.T) {
	tests := []struct {
		pw string
		ok bool
	}{
		{"", false},
		{"abc", false},
		{"seven77", false},
		{"eight888", true},
		{"café au lait", true},
		{"😀😀😀😀", true}, // 8 UTF-16 code units, as the browser counts them
		{"😀😀😀", false}, // 6
	}
	for _, tt := range tests {
		err := CheckNewPassword(tt.pw)
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, wallet.ErrInvalidArgument)) {
			t.Errorf("CheckNewPassword(%q) = %v, want ok=%v", tt.pw, err, tt.ok)
		}
	}
}
