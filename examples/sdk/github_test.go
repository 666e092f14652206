package sdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-github/v83/github"

	"github.com/retrytransport/retrytransport/policy"
)

// newGitHubFake starts a fake GitHub Enterprise REST API (under /api/v3/)
// that serves s: GET /repos/octocat/hello-world returns the repository, and
// POST /repos/octocat/hello-world/issues creates issue 1347 with the posted
// title. Its throttle is a secondary rate limit: 429 with Retry-After: 1.
// Every answer carries the rate-limit headers with quota left, as GitHub's
// do, so go-github never blocks a call on its own.
func newGitHubFake(s *script) *httptest.Server {
	return api{
		unavailable: `{"message":"Service Unavailable","documentation_url":"https://docs.github.com/rest","status":"503"}`,
		throttle: reply{status: http.StatusTooManyRequests, header: retryAfter1,
			body: `{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again.","documentation_url":"https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api#about-secondary-rate-limits","status":"429"}`},
		serve: func(r *http.Request, body []byte) reply {
			switch {
			case r.Method == http.MethodGet && r.URL.Path == "/api/v3/repos/octocat/hello-world":
				return reply{status: http.StatusOK,
					body: `{"id":1296269,"name":"hello-world","full_name":"octocat/hello-world","owner":{"login":"octocat","id":583231,"type":"User"},"private":false,"default_branch":"main","stargazers_count":80}`}
			case r.Method == http.MethodPost && r.URL.Path == "/api/v3/repos/octocat/hello-world/issues":
				var req struct{ Title string }
				_ = json.Unmarshal(body, &req)
				return reply{status: http.StatusCreated, body: fmt.Sprintf(`{"id":1,"number":1347,"state":"open","title":%q}`, req.Title)}
			}
			return reply{status: http.StatusNotFound, body: `{"message":"Not Found","documentation_url":"https://docs.github.com/rest","status":"404"}`}
		},
		header: func(h http.Header, n int, _ string) {
			h.Set("Content-Type", "application/json; charset=utf-8")
			h.Set("X-GitHub-Request-Id", fmt.Sprintf("REQ:%04d", n))
			h.Set("X-RateLimit-Limit", "5000")
			h.Set("X-RateLimit-Remaining", "4999")
			h.Set("X-RateLimit-Reset", "1767326645")
			h.Set("X-RateLimit-Resource", "core")
		},
	}.start(s)
}

// newGitHubClient returns a go-github client whose requests go through hc
// to srv, as to a GitHub Enterprise server.
func newGitHubClient(t testing.TB, srv *httptest.Server, hc *http.Client) *github.Client {
	c, err := github.NewClient(hc).WithEnterpriseURLs(srv.URL, srv.URL)
	if err != nil {
		t.Fatalf("WithEnterpriseURLs(%q): %v", srv.URL, err)
	}
	return c
}

// gitHubStatus returns the HTTP status of a go-github API error.
func gitHubStatus(err error) int {
	var er *github.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		return er.Response.StatusCode
	}
	return 0
}

func TestGitHubScenarios(t *testing.T) {
	setup := calls(newGitHubFake, func(t *testing.T, srv *httptest.Server, rt http.RoundTripper) *github.Client {
		return newGitHubClient(t, srv, &http.Client{Transport: rt})
	})
	runScenarios(t, []target{{
		name:       "Repositories.Get",
		policy:     policy.Standard,
		replayable: true,
		retryAfter: true,
		setup: setup(func(ctx context.Context, c *github.Client) error {
			repo, _, err := c.Repositories.Get(ctx, "octocat", "hello-world")
			if err == nil && repo.GetFullName() != "octocat/hello-world" {
				return fmt.Errorf("Get = %q; want octocat/hello-world", repo.GetFullName())
			}
			return err
		}),
		status: gitHubStatus,
	}, {
		// A POST without an idempotency key: sent again only after a
		// throttle, which proves the server did not process it.
		name:       "Issues.Create",
		policy:     policy.Standard,
		replayable: false,
		retryAfter: true,
		setup: setup(func(ctx context.Context, c *github.Client) error {
			issue, _, err := c.Issues.Create(ctx, "octocat", "hello-world", &github.IssueRequest{Title: github.Ptr("Found a bug")})
			if err == nil && (issue.GetNumber() != 1347 || issue.GetTitle() != "Found a bug") {
				return fmt.Errorf("Create = %d %q; want 1347 \"Found a bug\"", issue.GetNumber(), issue.GetTitle())
			}
			return err
		}),
		status: gitHubStatus,
	}})
}

// TestReusedConnectionHangUpIsResentByNetHTTP documents the one way the
// server can see more hits than the Transport made attempts: net/http's
// own Transport resends, once, a GET whose reused keep-alive connection
// closed before any response byte. The Transport never sees that failure.
func TestReusedConnectionHangUpIsResentByNetHTTP(t *testing.T) {
	s := newScript()
	srv := newGitHubFake(s)
	defer srv.Close()
	r := newRig(t, policy.Standard())
	c := newGitHubClient(t, srv, &http.Client{Transport: r.rt})
	ctx := context.Background()
	if _, _, err := c.Repositories.Get(ctx, "octocat", "hello-world"); err != nil {
		t.Fatalf("first Get: %v", err)
	}
	s.mu.Lock()
	s.faults = []fault{hangUp} // the second call reuses the first's connection
	s.mu.Unlock()

	if _, _, err := c.Repositories.Get(ctx, "octocat", "hello-world"); err != nil {
		t.Fatalf("second Get: %v", err)
	}

	if hits, attempts := len(s.Hits()), r.attempts.Load(); hits != 3 || attempts != 2 {
		t.Errorf("server saw %d hits for %d attempts; want 3 hits for 2 attempts (net/http resent one)", hits, attempts)
	}
}
