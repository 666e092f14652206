package redisretry_test

import (
	"bufio"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// monitor is a connection in MONITOR mode to a test's redis-server: it
// reads the commands the server runs, those that scripts call included,
// on the test's goroutine.
type monitor struct {
	conn net.Conn
	r    *bufio.Reader
}

// startMonitor opens a monitor of srv, closed when t ends.
func startMonitor(t *testing.T, srv *redisServer) *monitor {
	t.Helper()
	conn, err := net.Dial("tcp", srv.Addr)
	if err != nil {
		t.Fatalf("dial %s: %v", srv.Addr, err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	m := &monitor{conn: conn, r: bufio.NewReader(conn)}
	if _, err := conn.Write([]byte("MONITOR\r\n")); err != nil {
		t.Fatalf("MONITOR: %v", err)
	}
	if line := m.line(t); line != "+OK" {
		t.Fatalf("MONITOR = %q; want +OK", line)
	}
	return m
}

// line reads the monitor's next line, without its CRLF.
func (m *monitor) line(t *testing.T) string {
	t.Helper()
	if err := m.conn.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatalf("monitor: %v", err)
	}
	line, err := m.r.ReadString('\n')
	if err != nil {
		t.Fatalf("monitor: %v", err)
	}
	return strings.TrimSuffix(line, "\r\n")
}

// monitorArg is one quoted argument of a monitor line.
var monitorArg = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// until returns the commands the server has run since the last call,
// each as its arguments, up to an ECHO of mark, which it sends on c.
func (m *monitor) until(t *testing.T, c *redis.Client, mark string) [][]string {
	t.Helper()
	if err := c.Echo(t.Context(), mark).Err(); err != nil {
		t.Fatalf("ECHO: %v", err)
	}
	var cmds [][]string
	for {
		line := m.line(t)
		var args []string
		for _, q := range monitorArg.FindAllString(line, -1) {
			a, err := strconv.Unquote(q)
			if err != nil {
				t.Fatalf("monitor line %q: %v", line, err)
			}
			args = append(args, a)
		}
		if len(args) == 2 && strings.EqualFold(args[0], "echo") && args[1] == mark {
			return cmds
		}
		cmds = append(cmds, args)
	}
}

// hsetFields returns the fields that the HSET commands of cmds wrote to
// key, in order.
func hsetFields(cmds [][]string, key string) []string {
	var fields []string
	for _, args := range cmds {
		if len(args) < 2 || !strings.EqualFold(args[0], "hset") || args[1] != key {
			continue
		}
		for i := 2; i < len(args); i += 2 {
			fields = append(fields, args[i])
		}
	}
	return fields
}
