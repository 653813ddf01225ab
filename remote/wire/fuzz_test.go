package wire

import (
	"errors"
	"net/http"
	"reflect"
	"testing"

	"walletsync/wallet"
)

// FuzzDecodeFrame feeds arbitrary bodies to both frame decoders, as a page (the answer a
// client decodes) and as a batch (the request a server decodes). A decoder must refuse with
// ErrBadFrame or return a message that encodes and decodes back to itself: never panic,
// never allocate past the limits.
func FuzzDecodeFrame(f *testing.F) {
	c := newCodec()
	head, rows := sampleRows()
	for _, enc := range []Encoding{EncodingZstd, EncodingJSON} {
		b, _ := c.encode(enc, head, rows[:2])
		f.Add(enc == EncodingJSON, b)
		b, _ = c.encode(enc, batchHead{Chain: wallet.ChainTest, Expect: 1, Page: head}, rows[:1])
		f.Add(enc == EncodingJSON, b)
	}
	f.Add(false, frame(rawFrame(`{"table":"tx_labels"}`, 1, []byte{tagTime, 2, tagTime, 4, tagInt, 6, tagInt, 2, tagText, 1, 'x', tagTrue})))
	f.Add(true, []byte(`{"head":{"table":"tx_labels"},"rows":[["2026-01-01T00:00:00.000Z","2026-01-01T00:00:00.000Z",1,1,"l",false]]}`))
	f.Fuzz(func(t *testing.T, asJSON bool, body []byte) {
		enc := EncodingZstd
		if asJSON {
			enc = EncodingJSON
		}
		for _, mk := range []func() rowCarrier{func() rowCarrier { return &pageHead{} }, func() rowCarrier { return &batchHead{} }} {
			h := mk()
			got, err := c.decode(t.Context(), enc, body, h)
			if err != nil {
				if !errors.Is(err, ErrBadFrame) {
					t.Fatalf("refused without ErrBadFrame: %v", err)
				}
				continue
			}
			again, err := c.encode(enc, h, got)
			if err != nil {
				// A head the encoder refuses cannot come from a peer that encodes honestly, but
				// nothing it holds may be a value its column does not take.
				if !errors.Is(err, wallet.ErrInvalidArgument) && !errors.Is(err, ErrBadFrame) {
					t.Fatalf("re-encode: %v", err)
				}
				continue
			}
			h2 := mk()
			got2, err := c.decode(t.Context(), enc, again, h2)
			if err != nil || !reflect.DeepEqual(h, h2) || !reflect.DeepEqual(got, got2) {
				t.Fatalf("decode, encode, decode changed the message: %v\n%+v %v\n%+v %v", err, h, got, h2, got2)
			}
		}
	})
}

// FuzzDecodeError feeds arbitrary refusal bodies to the client's error decoder: it returns
// an error for every one, typed when the body is a walletsync refusal, and never panics.
func FuzzDecodeError(f *testing.F) {
	f.Add(`{"error":{"code":"server_busy","message":"full","retryAfterMs":1000}}`)
	f.Add(`{"error":{"code":"row_too_large","message":"m","rowTooLarge":{"table":"outputs","key":[1],"charge":9,"limit":1}}}`)
	f.Add(`{"error":{"code":"wrong_chain","message":"m","chains":{"source":"test","destination":"main"}}}`)
	f.Add(`{"error":{"code":"not_found","message":"m"}}`)
	f.Add(`<html>Cannot POST</html>`)
	f.Fuzz(func(t *testing.T, body string) {
		if err := fromWire(http.StatusConflict, []byte(body)); err == nil {
			t.Fatal("a refusal decoded as no error")
		}
	})
}
