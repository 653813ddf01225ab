package brc39

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// cheapKDF costs microseconds. Only the import side accepts it (as the toolbox's import
// has no minimums); Encrypt refuses it, so tests build files with it through newEncrypter.
var cheapKDF = KDFParams{Iterations: 1, MemoryKiB: 8, Parallelism: 1}

func TestKDFParams_CheckExport(t *testing.T) {
	for _, tc := range []struct {
		name   string
		params KDFParams
		want   error
		param  string
	}{
		{"defaults", DefaultKDFParams, nil, ""},
		{"stronger, within the import limits", KDFParams{16, 256 << 10, 4}, nil, ""},
		{"iterations 6", KDFParams{6, 131072, 1}, ErrKDFTooWeak, "iterations"},
		{"memory 131071", KDFParams{7, 131071, 1}, ErrKDFTooWeak, "memoryKiB"},
		{"parallelism 0", KDFParams{7, 131072, 0}, ErrKDFTooWeak, "parallelism"},
		{"cheap", cheapKDF, ErrKDFTooWeak, "iterations"},
		{"iterations 17", KDFParams{17, 131072, 1}, ErrKDFTooCostly, "iterations"},
		{"memory above 256 MiB", KDFParams{7, 256<<10 + 1, 1}, ErrKDFTooCostly, "memoryKiB"},
		{"parallelism 5", KDFParams{7, 131072, 5}, ErrKDFTooCostly, "parallelism"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.params.CheckExport()
			if tc.want == nil {
				if err != nil {
					t.Fatalf("CheckExport(%+v) = %v", tc.params, err)
				}
				return
			}
			var pe *KDFParamError
			if !errors.Is(err, tc.want) || !errors.As(err, &pe) || pe.Param != tc.param {
				t.Fatalf("CheckExport(%+v) = %v, want %v on %s", tc.params, err, tc.want, tc.param)
			}
		})
	}
}

func TestKDFLimits_Check(t *testing.T) {
	custom := KDFLimits{MaxIterations: 3, MaxMemoryKiB: 64}
	for _, tc := range []struct {
		name   string
		limits KDFLimits
		params KDFParams
		param  string // "" when accepted
	}{
		{"defaults accept the BRC-39 defaults", KDFLimits{}, DefaultKDFParams, ""},
		{"defaults accept the caps exactly", KDFLimits{}, KDFParams{16, 256 << 10, 4}, ""},
		{"defaults refuse 4 TiB", KDFLimits{}, KDFParams{7, 0xffffffff, 1}, "memoryKiB"},
		{"defaults refuse t 17", KDFLimits{}, KDFParams{17, 8, 1}, "iterations"},
		{"defaults refuse m 256 MiB + 1 KiB", KDFLimits{}, KDFParams{7, 256<<10 + 1, 1}, "memoryKiB"},
		{"defaults refuse the old caps", KDFLimits{}, KDFParams{7, 1 << 20, 1}, "memoryKiB"},
		{"defaults refuse p 5", KDFLimits{}, KDFParams{1, 1 << 10, 5}, "parallelism"},
		{"defaults refuse p 255", KDFLimits{}, KDFParams{1, 1 << 10, 255}, "parallelism"},
		{"custom accepts at its caps", custom, KDFParams{3, 64, 4}, ""},
		{"custom refuses the defaults", custom, DefaultKDFParams, "iterations"},
		{"custom refuses memory", custom, KDFParams{1, 65, 1}, "memoryKiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.limits.Check(tc.params)
			if tc.param == "" {
				if err != nil {
					t.Fatalf("Check(%+v) = %v", tc.params, err)
				}
				return
			}
			var pe *KDFParamError
			if !errors.Is(err, ErrKDFTooCostly) || !errors.As(err, &pe) || pe.Param != tc.param {
				t.Fatalf("Check(%+v) = %v, want ErrKDFTooCostly on %s", tc.params, err, tc.param)
			}
		})
	}
	if got := (KDFLimits{MaxParallelism: 2}).WithDefaults(); got != (KDFLimits{16, 256 << 10, 2}) {
		t.Fatalf("WithDefaults = %+v", got)
	}
}

// TestDeriveKey_RefusesBeforeArgon2: a hostile header asking for 4 TiB is refused; were
// Argon2 to run first, the test would run out of memory instead.
func TestDeriveKey_RefusesBeforeArgon2(t *testing.T) {
	hostile := NewHeader(KDFParams{Iterations: 0xffffffff, MemoryKiB: 0xffffffff, Parallelism: 255}, []byte{1}, []byte{2})
	_, err := DeriveKey(context.Background(), "pw", hostile, KDFLimits{})
	var pe *KDFParamError
	if !errors.Is(err, ErrKDFTooCostly) || !errors.As(err, &pe) || pe.Param != "iterations" {
		t.Fatalf("DeriveKey = %v, want ErrKDFTooCostly on iterations", err)
	}
	invalid := NewHeader(KDFParams{Iterations: 1, MemoryKiB: 8, Parallelism: 2}, []byte{1}, []byte{2})
	if _, err := DeriveKey(context.Background(), "pw", invalid, KDFLimits{}); !errors.Is(err, ErrBadHeader) {
		t.Fatalf("DeriveKey with 4 KiB per lane = %v, want ErrBadHeader", err)
	}
}

func TestDeriveKey_NormalisesPasswordToNFC(t *testing.T) {
	h := NewHeader(cheapKDF, sequence(0, 32), sequence(0xa0, 32))
	derive := func(pw string) Key {
		k, err := DeriveKey(context.Background(), pw, h, KDFLimits{})
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	nfd, nfc := derive("Cafe\u0301"), derive("Caf\u00e9")
	if nfd != nfc {
		t.Fatal("NFD and NFC spellings of one password derived different keys")
	}
	for _, other := range []string{"cafe\u0301", "Cafe", "Caf\u00e9 ", "Café\u200b"} {
		if derive(other) == nfc {
			t.Fatalf("password %+q derived the same key: no trimming or case folding may happen", other)
		}
	}
}

func TestDeriveKey_StopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := DeriveKey(ctx, "pw", NewHeader(cheapKDF, []byte{1}, []byte{2}), KDFLimits{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("DeriveKey = %v, want context.Canceled", err)
	}
}

func TestKey_NeverPrints(t *testing.T) {
	var k Key
	for i := range k {
		k[i] = 0xab
	}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%x", "%X", "%q", "%d"} {
		if out := fmt.Sprintf(verb, k); strings.Contains(strings.ToLower(out), "ab") || strings.Contains(out, "171") {
			t.Errorf("fmt %s printed the key: %s", verb, out)
		}
	}
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("derived", "key", k)
	if strings.Contains(buf.String(), "171") || !strings.Contains(buf.String(), "redacted") {
		t.Errorf("slog printed the key: %s", buf.String())
	}
}
