package api

import (
	"testing"
	"testing/synctest"
	"time"
)

func TestLoginCodes_SingleUseAndShortLived(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLoginCodes(DefaultLoginTTL)
		used, late := l.issue(), l.issue()
		if !l.redeem(used) || l.redeem(used) {
			t.Fatal("a code must work exactly once")
		}
		time.Sleep(DefaultLoginTTL - time.Second)
		fresh := l.issue()
		time.Sleep(time.Second)
		if l.redeem(late) {
			t.Fatal("a code worked at its expiry")
		}
		if !l.redeem(fresh) {
			t.Fatal("a code issued later was expired with the older one")
		}
		var codes []string
		for range maxLoginCodes + 1 {
			codes = append(codes, l.issue())
			time.Sleep(time.Millisecond)
		}
		if l.redeem(codes[0]) || !l.redeem(codes[1]) || len(l.codes) != maxLoginCodes-1 {
			t.Fatal("issuing beyond the bound must drop the code that expires first")
		}
	})
}
