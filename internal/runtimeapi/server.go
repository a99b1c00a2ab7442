package runtimeapi

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Runtime API headers (https://docs.aws.amazon.com/lambda/latest/dg/runtimes-api.html).
const (
	headerRequestID    = "Lambda-Runtime-Aws-Request-Id"
	headerDeadline     = "Lambda-Runtime-Deadline-Ms"
	headerFunctionARN  = "Lambda-Runtime-Invoked-Function-Arn"
	headerTraceID      = "Lambda-Runtime-Trace-Id"
	headerErrorType    = "Lambda-Runtime-Function-Error-Type"
	trailerErrorType   = "Lambda-Runtime-Function-Error-Type"
	trailerErrorBody   = "Lambda-Runtime-Function-Error-Body"
	maxErrorBody       = 1 << 20
	runtimeAPIBasePath = "/2018-06-01/runtime"
)

// invocation is one request to the function.
type invocation struct {
	id       string
	trace    string
	payload  []byte
	deadline time.Time
	result   chan result // buffered: the first answer wins, later ones are refused
	once     sync.Once
}

type result struct {
	body []byte
	err  error
}

func newInvocation(payload []byte) *invocation {
	return &invocation{id: newRequestID(), trace: newTraceID(), payload: payload, result: make(chan result, 1)}
}

// answer records the invocation's outcome; only the first counts.
func (inv *invocation) answer(r result) bool {
	ok := false
	inv.once.Do(func() { inv.result <- r; ok = true })
	return ok
}

func (e *environment) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+runtimeAPIBasePath+"/invocation/next", e.handleNext)
	mux.HandleFunc("POST "+runtimeAPIBasePath+"/invocation/{id}/response", e.handleResponse)
	mux.HandleFunc("POST "+runtimeAPIBasePath+"/invocation/{id}/error", e.handleError)
	mux.HandleFunc("POST "+runtimeAPIBasePath+"/init/error", e.handleInitError)
	return mux
}

// handleNext blocks until there is an invocation for the process, as Lambda freezes the
// environment between invocations.
func (e *environment) handleNext(w http.ResponseWriter, r *http.Request) {
	e.readyOnce.Do(func() { close(e.ready) })
	select {
	case inv := <-e.next:
		e.mu.Lock()
		e.inflight[inv.id] = inv
		e.mu.Unlock()
		h := w.Header()
		h.Set(headerRequestID, inv.id)
		h.Set(headerDeadline, strconv.FormatInt(inv.deadline.UnixMilli(), 10))
		h.Set(headerFunctionARN, e.f.FunctionARN())
		h.Set(headerTraceID, inv.trace)
		h.Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(inv.payload)
	case <-r.Context().Done():
	case <-e.closing:
		http.Error(w, "environment shutting down", http.StatusGone)
	}
}

// handleResponse takes the function's result. aws-lambda-go streams the body and reports an
// error that happens while streaming in trailers, so those are checked after the body.
func (e *environment) handleResponse(w http.ResponseWriter, r *http.Request) {
	inv := e.take(w, r)
	if inv == nil {
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxResponse))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		inv.answer(result{err: &FunctionError{Type: "Function.ResponseSizeTooLarge",
			Message: fmt.Sprintf("Response payload size exceeded maximum allowed payload size (%d bytes).", MaxResponse)}})
		writeStatus(w, http.StatusRequestEntityTooLarge, "ResponseSizeTooLarge")
		return
	case err != nil:
		inv.answer(result{err: &FunctionError{Type: "Runtime.TruncatedResponse", Message: err.Error()}})
		writeStatus(w, http.StatusBadRequest, "TruncatedResponse")
		return
	}
	if t := r.Trailer.Get(trailerErrorType); t != "" {
		msg := r.Trailer.Get(trailerErrorBody)
		if b, err := base64.StdEncoding.DecodeString(msg); err == nil {
			msg = string(b)
		}
		inv.answer(result{err: &FunctionError{Type: t, Message: msg}})
	} else {
		inv.answer(result{body: body})
	}
	writeStatus(w, http.StatusAccepted, "OK")
}

// errorBody is what runtimes post to /error and /init/error.
type errorBody struct {
	Message    string          `json:"errorMessage"`
	Type       string          `json:"errorType"`
	StackTrace json.RawMessage `json:"stackTrace,omitempty"`
}

func (e *environment) handleError(w http.ResponseWriter, r *http.Request) {
	inv := e.take(w, r)
	if inv == nil {
		return
	}
	inv.answer(result{err: readFunctionError(r)})
	writeStatus(w, http.StatusAccepted, "OK")
}

// handleInitError fails the environment's start; Lambda then discards the environment.
func (e *environment) handleInitError(w http.ResponseWriter, r *http.Request) {
	fe := readFunctionError(r)
	select {
	case e.initErr <- fe:
	default:
	}
	writeStatus(w, http.StatusAccepted, "OK")
}

func readFunctionError(r *http.Request) *FunctionError {
	raw, _ := io.ReadAll(io.LimitReader(r.Body, maxErrorBody))
	var b errorBody
	fe := &FunctionError{Type: r.Header.Get(headerErrorType)}
	if json.Unmarshal(raw, &b) == nil && (b.Type != "" || b.Message != "") {
		fe.Message, fe.StackTrace = b.Message, b.StackTrace
		if b.Type != "" {
			fe.Type = b.Type
		}
	} else {
		fe.Message = string(raw)
	}
	if fe.Type == "" {
		fe.Type = "Runtime.Unknown"
	}
	return fe
}

// take removes the invocation the request answers, or writes Lambda's 400 for an unknown
// request id (including one already answered).
func (e *environment) take(w http.ResponseWriter, r *http.Request) *invocation {
	id := r.PathValue("id")
	e.mu.Lock()
	inv := e.inflight[id]
	delete(e.inflight, id)
	e.mu.Unlock()
	if inv == nil {
		writeError(w, http.StatusBadRequest, "InvalidRequestID", "Invalid request ID: "+strconv.Quote(id))
	}
	return inv
}

func writeStatus(w http.ResponseWriter, code int, status string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"status": status})
}

func writeError(w http.ResponseWriter, code int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"errorType": typ, "errorMessage": msg})
}
