package crash

import (
	"encoding/json"
	"os"
	"runtime"
	"testing"

	"walletsync/testkit/tier"
)

// TestMain doubles as the crash child of the harness's own tests: it passes boundaries
// "a" and "b" in turn, Task.Passes times, reporting how many it has passed.
func TestMain(m *testing.M) {
	if k, task, ok := Child(); ok {
		var c struct{ Passes int }
		if err := json.Unmarshal(task, &c); err != nil {
			Fail("bad task: %v", err)
		}
		for i := range c.Passes {
			k.Reach("a", i)
			k.Reach("b", i)
		}
		Fail("passed every boundary without dying")
	}
	os.Exit(m.Run())
}

func TestRun_KillsAtTheNthPassingAndReturnsTheReport(t *testing.T) {
	for _, tc := range []struct {
		p    Point
		want int // the passes before the fatal one
	}{
		{Point{At: "a", N: 1}, 0},
		{Point{At: "b", N: 1}, 0},
		{Point{At: "b", N: 3}, 2},
	} {
		t.Run(tc.p.String(), func(t *testing.T) {
			t.Parallel()
			var got int
			if err := json.Unmarshal(Run(t, tc.p, struct{ Passes int }{5}), &got); err != nil || got != tc.want {
				t.Fatalf("report %d (%v); want %d", got, err, tc.want)
			}
		})
	}
}

// A child that never reaches its Point is reported, not taken for a crash: the fake t
// records the failure Run would end a test with.
func TestRun_FailsWhenTheChildDoesNotDie(t *testing.T) {
	tier.Full(t, "a child process") // here, not in the fake t that Run is given
	ft := &fatalT{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Run(ft, Point{At: "a", N: 9}, struct{ Passes int }{5})
	}()
	<-done
	if ft.msg == "" {
		t.Fatal("Run accepted a child that exited without reaching its point")
	}
}

// fatalT records Fatalf and ends the goroutine, as testing.T does.
type fatalT struct {
	testing.TB
	msg string
}

func (f *fatalT) Helper() {}

func (f *fatalT) Fatalf(format string, args ...any) {
	f.msg = format
	runtime.Goexit()
}
