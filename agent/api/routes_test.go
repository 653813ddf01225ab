package api

import "testing"

func TestRoute_Path(t *testing.T) {
	for _, tc := range []struct {
		route Route
		args  []string
		want  string
	}{
		{RouteStatus, nil, "/api/v1/status"},
		{RouteRun, []string{"usb"}, "/api/v1/destinations/usb/run"},
		{RouteRun, []string{"a/b"}, "/api/v1/destinations/a%2Fb/run"},
		{RouteTaskCancel, []string{"../status"}, "/api/v1/tasks/..%2Fstatus/cancel"},
		{RouteSecretSet, []string{"Bad Key?x=1"}, "/api/v1/secrets/Bad%20Key%3Fx=1"},
	} {
		if got := tc.route.Path(tc.args...); got != tc.want {
			t.Errorf("%s.Path(%q) = %q, want %q", tc.route, tc.args, got, tc.want)
		}
	}
	if m := RouteBackupVerify.Method(); m != "POST" {
		t.Errorf("Method = %q", m)
	}
	for _, args := range [][]string{nil, {"a", "b"}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("RouteRun.Path(%q) did not panic", args)
				}
			}()
			RouteRun.Path(args...)
		}()
	}
}
