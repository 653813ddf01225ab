package auth

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"
	"unicode/utf8"
)

// nonceRandLen is the random half of a session nonce; the HMAC-SHA256 over it follows, so a
// nonce is 48 bytes, 64 base64 characters without padding.
const (
	nonceRandLen = 16
	nonceLen     = nonceRandLen + 32
)

// CreateNonce makes a session nonce as @bsv/sdk's createNonce does: 16 random bytes r, then
// HMAC(r) under protocol [2, "server hmac"], key id TextDecoder().decode(r), counterparty
// self; returned as base64(r ‖ mac). Only s can verify it.
func CreateNonce(ctx context.Context, s Signer) (string, error) {
	r := make([]byte, nonceRandLen)
	rand.Read(r)
	return nonceFrom(ctx, s, r)
}

// nonceFrom is CreateNonce with its random bytes given.
func nonceFrom(ctx context.Context, s Signer, r []byte) (string, error) {
	mac, err := s.CreateHMAC(ctx, r, ProtocolNonce, DecodeUTF8(r), Self)
	if err != nil {
		return "", fmt.Errorf("create nonce: %w", err)
	}
	return base64.StdEncoding.EncodeToString(append(r[:len(r):len(r)], mac...)), nil
}

// VerifyNonce checks that nonce is one that CreateNonce made with s (verifyNonce). Anything
// else, malformed or not, is an error wrapping ErrBadNonce; a failing signer's error is
// returned as it is.
func VerifyNonce(ctx context.Context, s Signer, nonce string) error {
	// Go's decoder skips \r and \n even when strict, so the nonce must also be the canonical
	// encoding of its bytes: one nonce, one spelling.
	b, err := base64.StdEncoding.Strict().DecodeString(nonce)
	if err != nil || len(b) != nonceLen || base64.StdEncoding.EncodeToString(b) != nonce {
		return fmt.Errorf("verify nonce: %w: not 48 bytes of base64", ErrBadNonce)
	}
	r := b[:nonceRandLen]
	err = s.VerifyHMAC(ctx, r, b[nonceRandLen:], ProtocolNonce, DecodeUTF8(r), Self)
	if err != nil {
		if isVerifyFailure(err) {
			return fmt.Errorf("verify nonce: %w: %w", ErrBadNonce, err)
		}
		return fmt.Errorf("verify nonce: %w", err)
	}
	return nil
}

// DecodeUTF8 decodes b as the WHATWG Encoding Standard's UTF-8 decoder does by default
// (JavaScript's new TextDecoder().decode): a leading byte order mark is dropped, and each
// maximal subpart of an ill-formed sequence becomes one U+FFFD. Go's own decoders differ:
// range and utf8.DecodeRune give one U+FFFD per bad byte (E2 82 41 gives two, WHATWG one),
// strings.ToValidUTF8 merges whole runs.
func DecodeUTF8(b []byte) string {
	if len(b) >= 3 && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF {
		b = b[3:]
	}
	var sb strings.Builder
	sb.Grow(len(b))
	for i := 0; i < len(b); {
		c := b[i]
		if c < 0x80 {
			sb.WriteByte(c)
			i++
			continue
		}
		need, lower, upper := 0, byte(0x80), byte(0xBF)
		var cp rune
		switch {
		case c >= 0xC2 && c <= 0xDF:
			need, cp = 1, rune(c&0x1F)
		case c >= 0xE0 && c <= 0xEF:
			need, cp = 2, rune(c&0x0F)
			if c == 0xE0 {
				lower = 0xA0
			} else if c == 0xED {
				upper = 0x9F
			}
		case c >= 0xF0 && c <= 0xF4:
			need, cp = 3, rune(c&0x07)
			if c == 0xF0 {
				lower = 0x90
			} else if c == 0xF4 {
				upper = 0x8F
			}
		default:
			sb.WriteRune(utf8.RuneError)
			i++
			continue
		}
		j := i + 1
		for ; need > 0; need-- {
			if j >= len(b) || b[j] < lower || b[j] > upper {
				break
			}
			cp = cp<<6 | rune(b[j]&0x3F)
			lower, upper = 0x80, 0xBF
			j++
		}
		if need > 0 {
			// The byte that broke the sequence (if any) starts the next one.
			sb.WriteRune(utf8.RuneError)
		} else {
			sb.WriteRune(cp)
		}
		i = j
	}
	return sb.String()
}
