//go:build !unix

package bench

import "time"

// cpuTime is not measured on this platform: CPU per record reads 0.
func cpuTime() time.Duration { return 0 }
