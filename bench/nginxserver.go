package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/retrytransport/retrytransport/internal/childproc"
)

// The nginx scenario's server capacity, the throttled scenario's numbers
// in nginx's own limiter: limit_req at nginxRate requests per second with
// a burst of nginxBurst, nodelay.
const (
	nginxRate  = throttleRate  // requests per second
	nginxBurst = throttleBurst // requests
)

// Bounds on the waits for an nginx child process.
const (
	nginxStartTimeout = 10 * time.Second // until it answers /ready
	nginxStopTimeout  = 5 * time.Second  // after SIGTERM, before SIGKILL
)

// nginxDebianPath is where Debian's nginx packages install the binary: in
// /usr/sbin, which is on root's PATH but often not on a normal user's.
const nginxDebianPath = "/usr/sbin/nginx"

// nginxConf is the configuration of the scenario's nginx, with the port
// (%[1]d), the rate (%[2]d) and the burst (%[3]d) to fill in. Every path
// in it is relative to the prefix (-p), a temporary directory, so that an
// unprivileged user can run it: Debian's build puts the temp paths, pid
// file and logs under /var otherwise.
//
// How limit_req admits (ngx_http_limit_req_module.c): one zone entry,
// since the key, $server_name, is the same for every request, holds an
// "excess" in thousandths of a request. An admitted request adds 1000;
// the excess drains at the rate, per whole millisecond of nginx's cached
// clock (rate=200r/s is 0.2 request per ms, one every 5 ms); a request that
// would lift it above burst × 1000 is refused and changes nothing. The
// entry's first request starts it at 0, so from idle burst+1 requests (21)
// pass at once, and then one every 5 ms: at most 21 + 200·T in T seconds,
// whatever the client does. nodelay answers at once, never queues.
//
// limit_req runs in the preaccess phase, after the rewrite phase in which
// "return" answers: a "return 200" in the limited location would bypass
// the limit. The location therefore lets try_files, in the precontent
// phase, send the request to @ok, whose return is not limited again
// (limit_req acts once per request). /ready is for the start-up check and
// spends no token.
//
// The 429 carries Retry-After: 1 and, as the throttled scenario's server
// (writeThrottled), an AWS throttling code in X-Amzn-ErrorType and a JSON
// __type, without which the SDK's retryers would not retry it. Refusals
// are logged at info, below the error log's level, so that they cost no
// write. master_process off makes nginx one process that serves, which the
// bench's parent-death signal (childproc) kills with the bench: with a
// master, its workers would outlive a killed master and keep the port.
const nginxConf = `# The bench's nginx scenario; paths are relative to the prefix (-p).
daemon off;
master_process off;
worker_processes 1;
pid nginx.pid;
error_log error.log warn;

events {
    worker_connections 1024;
}

http {
    access_log off;
    client_body_temp_path body;
    proxy_temp_path proxy;
    fastcgi_temp_path fastcgi;
    uwsgi_temp_path uwsgi;
    scgi_temp_path scgi;
    keepalive_requests 100000;

    limit_req_zone $server_name zone=bench:1m rate=%[2]dr/s;
    limit_req_status 429;
    limit_req_log_level info;

    server {
        listen 127.0.0.1:%[1]d;
        server_name bench;

        location = /ready {
            return 204;
        }

        location / {
            limit_req zone=bench burst=%[3]d nodelay;
            error_page 429 = @throttled;
            try_files /.absent @ok;
        }

        location @ok {
            default_type text/plain;
            return 200 "ok";
        }

        location @throttled {
            default_type application/json;
            add_header Retry-After 1 always;
            add_header X-Amzn-ErrorType ThrottlingException always;
            return 429 '{"__type":"ThrottlingException","message":"Rate exceeded"}';
        }
    }
}
`

// nginxServer is an nginx child process serving nginxConf on a free
// 127.0.0.1 port, from a temporary prefix directory that Close removes.
type nginxServer struct {
	url  string // http://127.0.0.1:port, no trailing slash
	dir  string // the prefix: configuration, pid file, error log, temp paths
	proc *childproc.Process
}

// findNginx returns the nginx binary on PATH, or Debian's in /usr/sbin.
func findNginx() (string, error) {
	path, err := exec.LookPath("nginx")
	if err == nil {
		return path, nil
	}
	if fi, statErr := os.Stat(nginxDebianPath); statErr == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
		return nginxDebianPath, nil
	}
	return "", fmt.Errorf("no nginx on PATH or at %s (Debian: apt-get install nginx-light): %w", nginxDebianPath, err)
}

// startNginx starts the nginx at path with nginxConf on a free loopback
// port and waits until it answers. A port another process takes between
// the probe and nginx's bind makes it try again, on a new port.
func startNginx(path string) (*nginxServer, error) {
	var lastErr error
	for range 3 {
		s, err := startNginxAt(path)
		if err == nil {
			return s, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

// startNginxAt runs the nginx at path once, on a free port.
func startNginxAt(path string) (*nginxServer, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "bench-nginx-")
	if err != nil {
		return nil, fmt.Errorf("starting nginx: %w", err)
	}
	conf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(conf, fmt.Appendf(nil, nginxConf, port, nginxRate, nginxBurst), 0o644); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("starting nginx: %w", err)
	}
	s := &nginxServer{url: "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), dir: dir}
	// -e: the log nginx writes before it reads error_log, which some
	// builds put under /var/log.
	s.proc, err = childproc.Start("nginx on "+s.url, exec.Command(path, "-p", dir, "-c", conf, "-e", filepath.Join(dir, "error.log")))
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("starting %w", err)
	}
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	if err := s.proc.WaitReady(context.Background(), nginxStartTimeout, func(ctx context.Context) error {
		return s.ready(ctx, client)
	}); err != nil {
		err = s.withLog(err)
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

// ready checks through client that nginx answers /ready with 204.
func (s *nginxServer) ready(ctx context.Context, client *http.Client) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"/ready", nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("/ready answered %s", resp.Status)
	}
	return nil
}

// withLog adds to err, from nginx, what it wrote to its error log; call
// it after the process has exited.
func (s *nginxServer) withLog(err error) error {
	if b, readErr := os.ReadFile(filepath.Join(s.dir, "error.log")); readErr == nil && len(b) > 0 {
		return fmt.Errorf("error.log %q: %w", strings.TrimSpace(string(b)), err)
	}
	return err
}

// Close stops nginx with SIGTERM (its fast shutdown, which closes the
// idle keep-alive connections), or with SIGKILL if it has not exited
// within nginxStopTimeout, and removes the prefix directory. It returns an
// error if nginx had to be killed or exited with a non-zero status.
func (s *nginxServer) Close() error {
	defer os.RemoveAll(s.dir)
	if err := s.proc.Stop(nginxStopTimeout); err != nil {
		return s.withLog(err)
	}
	return nil
}

// nginxVersion returns what "nginx -v" prints ("nginx/1.22.1"), or "nginx"
// if it cannot tell within a few seconds.
func nginxVersion(path string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "-v").CombinedOutput()
	if v, ok := strings.CutPrefix(strings.TrimSpace(string(out)), "nginx version: "); err == nil && ok {
		return v
	}
	return "nginx"
}
