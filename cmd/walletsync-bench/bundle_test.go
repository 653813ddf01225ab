package main

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestBench_Bundle runs `bench bundle` on the small fixture and checks what it measured;
// never its times against a goal.
func TestBench_Bundle(t *testing.T) {
	var out bytes.Buffer
	if err := RunBundle(t.Context(), []string{"--fixture", "small", "--dir", t.TempDir(), "--interval", "1ms", "--repeat", "1", "--json"}, &out); err != nil {
		t.Fatal(err)
	}
	var rep bundleBenchReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("bench output %q: %v", out.Bytes(), err)
	}
	if rep.IdleP95ms <= 0 || rep.BundleP95ms <= 0 || rep.BundleBytes <= 0 || rep.CopyBytes <= rep.BundleBytes || rep.BundleSeconds <= 0 || rep.CopySeconds <= 0 {
		t.Fatalf("report: %+v", rep)
	}
}
