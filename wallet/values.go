package wallet

import (
	"fmt"
	"unicode/utf8"
)

// Values a peer sends that @bsv/wallet-toolbox 2.1.26 itself never writes. A store keeps
// what it is given, so a row from outside (a BRC-40 chunk, a page of the paged wire) is
// checked before it is merged: once stored, a negative output or a three-character txid
// would travel on to every other store of the wallet. The rules are the narrow ones the
// toolbox's schema and writers guarantee (reference/wallet-schema.md), nothing stricter:
// transactions.satoshis is a signed net amount and stays unchecked, blockHash and
// merkleRoot are whatever a chain tracker answered, and an empty txid is the toolbox's
// own default for an entity not yet signed (EntityTransaction, EntityProvenTxReq).

// CheckValues refuses a normalized row of t holding a value the toolbox never writes, with a
// *UnstorableError naming the column (it matches ErrInvalidArgument; the value itself is
// not in the error, text in a wallet includes key material):
//
//   - text or JSON that is not valid UTF-8 (a decoder would have altered it to U+FFFD);
//   - an id out of range: the table's own id, userId and every foreign key (Refs) are
//     AUTOINCREMENT ids, 1 or more when set;
//   - a txid column that is neither empty nor 64 hexadecimal digits;
//   - a negative outputs.satoshis or commissions.satoshis (an output's value), or a
//     negative outputs.vout.
func (t *Table) CheckValues(r Row) error {
	if len(r) != len(t.Columns) {
		return fmt.Errorf("check %s row: %d values for %d columns: %w", t.Name, len(r), len(t.Columns), ErrInvalidArgument)
	}
	refuse := func(col, reason string) error {
		return &UnstorableError{Table: t.Name, Column: col, Key: t.KeyOf(r), Reason: reason}
	}
	for i, c := range t.Columns {
		v := r[i]
		if v == nil {
			continue
		}
		switch x := v.(type) {
		case string:
			if !utf8.ValidString(x) {
				return refuse(c.Name, "text that is not valid UTF-8")
			}
			if c.Name == "txid" && x != "" && !isHex64(x) {
				return refuse(c.Name, "a txid that is not 64 hexadecimal digits")
			}
		case int64:
			if t.isID(c.Name) && x < 1 {
				return refuse(c.Name, fmt.Sprintf("an id of %d, below 1", x))
			}
			if x < 0 && t.unsigned(c.Name) {
				return refuse(c.Name, fmt.Sprintf("a negative %s", c.Name))
			}
		}
	}
	return nil
}

// isID reports whether col holds an AUTOINCREMENT id: the table's own, userId or a
// foreign key.
func (t *Table) isID(col string) bool {
	if col == t.ID || col == "userId" {
		return true
	}
	for _, ref := range t.Refs {
		if ref.Column == col {
			return true
		}
	}
	return false
}

// unsigned reports whether col is never negative in a toolbox store.
func (t *Table) unsigned(col string) bool {
	switch t.Name {
	case TableOutputs:
		return col == "satoshis" || col == "vout"
	case TableCommissions:
		return col == "satoshis"
	}
	return false
}

func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// CheckJSONText refuses JSON text whose strings a decoder would alter rather than keep:
// bytes that are not valid UTF-8, and a \u escape of a UTF-16 surrogate that is not one half
// of a pair (a lone "\ud800"), both of which encoding/json turns into U+FFFD without a word.
// The error wraps ErrInvalidArgument and gives the byte offset, never the text. A
// backslash is legal only inside a JSON string, so the escapes are found without parsing;
// text that is not JSON at all is the parser's to refuse.
func CheckJSONText(b []byte) error {
	if !utf8.Valid(b) {
		off := 0
		for off < len(b) {
			r, n := utf8.DecodeRune(b[off:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			off += n
		}
		return fmt.Errorf("text that is not valid UTF-8 at byte %d: %w", off, ErrInvalidArgument)
	}
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' {
			continue
		}
		if i+1 >= len(b) {
			return nil
		}
		if b[i+1] != 'u' {
			i++ // \\, \" and the other one-letter escapes
			continue
		}
		u, ok := hex4(b, i+2)
		if !ok {
			return nil // malformed escape: the parser refuses it
		}
		switch {
		case u >= 0xD800 && u < 0xDC00:
			lo, ok := uint16(0), false
			if i+7 < len(b) && b[i+6] == '\\' && b[i+7] == 'u' {
				lo, ok = hex4(b, i+8)
			}
			if !ok || lo < 0xDC00 || lo > 0xDFFF {
				return fmt.Errorf("a lone UTF-16 surrogate \\u%04x at byte %d: %w", u, i, ErrInvalidArgument)
			}
			i += 11
		case u >= 0xDC00 && u <= 0xDFFF:
			return fmt.Errorf("a lone UTF-16 surrogate \\u%04x at byte %d: %w", u, i, ErrInvalidArgument)
		default:
			i += 5
		}
	}
	return nil
}

// hex4 reads the four hexadecimal digits of a \u escape at b[i:].
func hex4(b []byte, i int) (uint16, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var u uint16
	for _, c := range b[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		u = u<<4 | uint16(c)
	}
	return u, true
}
