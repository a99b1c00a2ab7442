package runtimeapi

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"
)

// newRequestID returns a random UUID (version 4), the shape of Lambda request ids.
func newRequestID() string {
	b := random(16)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// newTraceID returns an X-Ray trace header as Lambda passes it (not sampled: nothing is
// sent to X-Ray locally).
func newTraceID() string {
	return fmt.Sprintf("Root=1-%08x-%s;Parent=%s;Sampled=0", time.Now().Unix(), hex.EncodeToString(random(12)), hex.EncodeToString(random(8)))
}

func random(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read does not fail on supported platforms
	return b
}
