package command

import (
	"errors"
	"io"
	"slices"
	"testing"
)

func TestParseFlags_FlagsAnywhere(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantFor  string
		wantAll  bool
		wantArgs []string
	}{
		{"flags first", []string{"--for", "2h", "backup"}, "2h", false, []string{"backup"}},
		{"flags after", []string{"backup", "--for", "2h"}, "2h", false, []string{"backup"}},
		{"flags between", []string{"a", "--all", "b", "--for=1m", "c"}, "1m", true, []string{"a", "b", "c"}},
		{"after -- all positional", []string{"a", "--", "--for", "b"}, "", false, []string{"a", "--for", "b"}},
		{"no positional", []string{"--all"}, "", true, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := NewFlags("pause", "DEST", io.Discard)
			forDur := fs.String("for", "", "")
			all := fs.Bool("all", false, "")
			if err := ParseFlags(fs, tt.args); err != nil {
				t.Fatal(err)
			}
			if *forDur != tt.wantFor || *all != tt.wantAll || !slices.Equal(fs.Args(), tt.wantArgs) {
				t.Fatalf("ParseFlags(%q): --for %q --all %v args %q; want %q %v %q", tt.args, *forDur, *all, fs.Args(), tt.wantFor, tt.wantAll, tt.wantArgs)
			}
		})
	}
}

func TestParseFlags_BadFlagAfterPositionalIsUsage(t *testing.T) {
	fs := NewFlags("pause", "DEST", io.Discard)
	fs.Duration("for", 0, "")
	if err := ParseFlags(fs, []string{"backup", "--for", "5x"}); !errors.Is(err, ErrUsage) {
		t.Fatalf("ParseFlags with a bad value after DEST: %v; want ErrUsage", err)
	}
}

func TestClosest_Typos(t *testing.T) {
	names := []string{"status", "tasks", "serve", "sync", "wallet info", "wallet check"}
	tests := []struct {
		typed string
		want  []string
	}{
		{"staus", []string{"status"}},
		{"stauts", []string{"status"}},
		{"wallet infoo", []string{"wallet info"}},
		{"SYNC", []string{"sync"}},
		{"frobnicate", nil},
	}
	for _, tt := range tests {
		if got := Closest(tt.typed, names); !slices.Equal(got, tt.want) {
			t.Errorf("Closest(%q) = %q; want %q", tt.typed, got, tt.want)
		}
	}
}
