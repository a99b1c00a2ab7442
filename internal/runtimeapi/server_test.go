package runtimeapi

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Answers for request ids the runtime never handed out (or already answered) are refused,
// as Lambda does, and do not disturb anything.
func TestUnknownRequestID(t *testing.T) {
	e := &environment{inflight: map[string]*invocation{}}
	srv := httptest.NewServer(e.routes())
	defer srv.Close()
	for _, path := range []string{"/invocation/nope/response", "/invocation/nope/error"} {
		resp, err := srv.Client().Post(srv.URL+runtimeAPIBasePath+path, "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "InvalidRequestID") {
			t.Errorf("%s: %d %s, want 400 InvalidRequestID", path, resp.StatusCode, body)
		}
	}
}

// readFunctionError accepts what runtimes send: the JSON body, the type header alone, or
// plain text.
func TestReadFunctionError(t *testing.T) {
	for _, tc := range []struct {
		header, body, wantType, wantMsg string
	}{
		{"", `{"errorMessage":"m","errorType":"T","stackTrace":["a"]}`, "T", "m"},
		{"Handled", `{"errorMessage":"m"}`, "Handled", "m"},
		{"", `not json`, "Runtime.Unknown", "not json"},
		{"X", ``, "X", ""},
	} {
		r := httptest.NewRequest("POST", "/", strings.NewReader(tc.body))
		if tc.header != "" {
			r.Header.Set(headerErrorType, tc.header)
		}
		fe := readFunctionError(r)
		if fe.Type != tc.wantType || fe.Message != tc.wantMsg {
			t.Errorf("%q %q: got %q %q, want %q %q", tc.header, tc.body, fe.Type, fe.Message, tc.wantType, tc.wantMsg)
		}
	}
}
