package wallet

import (
	"errors"
	"reflect"
	"testing"
)

// FuzzParseCursor feeds arbitrary cursors to ParseCursor: a cursor comes back from a
// destination's checkpoint, outside bytes once the destination is remote. Whatever it holds,
// decoding never panics; it refuses with ErrCursorMismatch, or returns the start of the
// table, or a key with one integer or text per key column; and a cursor the view issued
// decodes to the key it was issued for. Resume, which carries a checkpoint's cursor into a
// new view, refuses the same way, and what it returns the new view decodes to the same key.
func FuzzParseCursor(f *testing.F) {
	v, next := "view-1", "view-2"
	for i, t := range SyncOrder {
		key := make([]any, len(t.Key))
		for k := range key {
			key[k] = int64(i*10 + k)
		}
		f.Add(uint8(i), string(EncodeCursor(v, t, key)))
	}
	f.Add(uint8(0), "")
	f.Add(uint8(0), "eyJ2Ijoidmlldy0xIiwidCI6InVzZXJzIiwiayI6W3t9XX0") // {"v":"view-1","t":"users","k":[{}]}
	f.Add(uint8(12), "eyJ2Ijoidmlldy0xIiwidCI6ImNlcnRpZmljYXRlX2ZpZWxkcyIsImsiOlsxLjUsdHJ1ZV19")
	f.Fuzz(func(t *testing.T, table uint8, c string) {
		tb := SyncOrder[int(table)%len(SyncOrder)]
		key, err := ParseCursor(Cursor(c), tb, v)
		resumed, rerr := ResumeCursor(next, tb.Name, Cursor(c))
		switch {
		case rerr != nil && !errors.Is(rerr, ErrCursorMismatch):
			t.Fatalf("resume cursor %q: %v, want ErrCursorMismatch", c, rerr)
		case rerr == nil:
			rkey, err := ParseCursor(resumed, tb, next)
			if err != nil {
				t.Fatalf("resumed cursor %q of %q: %v", resumed, c, err)
			}
			if key != nil && !reflect.DeepEqual(rkey, key) {
				t.Fatalf("cursor %q: key %v, resumed %v", c, key, rkey)
			}
		case err == nil:
			t.Fatalf("cursor %q decodes in its own view but cannot be resumed: %v", c, rerr)
		}
		if err != nil {
			if !errors.Is(err, ErrCursorMismatch) {
				t.Fatalf("cursor %q: %v, want ErrCursorMismatch", c, err)
			}
			return
		}
		if key == nil {
			return
		}
		if len(key) != len(tb.Key) {
			t.Fatalf("cursor %q: key %v for %d key columns", c, key, len(tb.Key))
		}
		for _, k := range key {
			switch k.(type) {
			case int64, string:
			default:
				t.Fatalf("cursor %q: key value %#v", c, k)
			}
		}
		if again, err := ParseCursor(EncodeCursor(v, tb, key), tb, v); err != nil || !reflect.DeepEqual(again, key) {
			t.Fatalf("re-encoded key %v decodes to %v, %v", key, again, err)
		}
	})
}
