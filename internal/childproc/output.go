package childproc

import (
	"bytes"
	"sync"
)

// capped keeps the first max bytes written to it and drops the rest, so
// that a chatty process cannot fill memory. It is safe for concurrent use.
type capped struct {
	mu  sync.Mutex
	max int
	buf bytes.Buffer
}

// Write keeps what still fits and reports all of p as written.
func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf.Write(p[:min(len(p), max(0, c.max-c.buf.Len()))])
	return len(p), nil
}

// String returns what was kept.
func (c *capped) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}
