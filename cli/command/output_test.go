package command

import "testing"

func TestProgressText_SaysPercentRateAndTimeLeft(t *testing.T) {
	tests := []struct {
		name        string
		done, total int64
		rate        float64
		want        string
	}{
		{"no rate yet", 120, 1000, 0, "120/1000 rows (12%), measuring the rate"},
		{"settled", 500, 1000, 100, "500/1000 rows (50%), 100 rows/s, about 5s left"},
		{"no total", 500, 0, 100, "500 rows, 100 rows/s"},
		{"never 100% before the end", 1000, 1000, 100, "1000/1000 rows (99%), 100 rows/s"},
		{"past an estimated total", 1200, 1000, 100, "1200/1000 rows (99%), 100 rows/s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ProgressText(tt.done, tt.total, tt.rate); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
