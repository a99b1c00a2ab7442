package runtimeapi

import (
	"bytes"
	"log/slog"
	"sync"
)

// maxLine bounds a buffered output line: a function printing without newlines must not grow
// memory without end.
const maxLine = 64 * 1024

// lineWriter logs the process's output one line at a time, as CloudWatch Logs shows it.
type lineWriter struct {
	log    *slog.Logger
	stream string
	mu     sync.Mutex
	buf    []byte
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			if len(w.buf) >= maxLine {
				w.emit(w.buf)
				w.buf = w.buf[:0]
			}
			return len(p), nil
		}
		w.emit(w.buf[:i])
		w.buf = w.buf[i+1:]
	}
}

// flush logs a last line without newline.
func (w *lineWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.emit(w.buf)
		w.buf = nil
	}
}

func (w *lineWriter) emit(line []byte) {
	w.log.Info(string(bytes.TrimRight(line, "\r")), "source", "function", "stream", w.stream)
}
