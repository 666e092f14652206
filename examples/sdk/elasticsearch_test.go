package sdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/elastic/go-elasticsearch/v8"
	"github.com/elastic/go-elasticsearch/v8/esapi"

	"github.com/retrytransport/retrytransport/policy"
)

// newElasticsearchFake starts a fake Elasticsearch 8 node that serves s:
// PUT /books/_doc/1 and POST /books/_doc index a document, and GET
// /books/_doc/1 returns it. Every answer carries X-Elastic-Product:
// Elasticsearch, without which the client refuses to talk to the server.
// Its throttle is a 429 es_rejected_execution_exception with Retry-After: 1.
func newElasticsearchFake(s *script) *httptest.Server {
	return api{
		unavailable: `{"error":{"root_cause":[{"type":"cluster_block_exception","reason":"blocked by: [SERVICE_UNAVAILABLE/2/no master];"}],"type":"cluster_block_exception","reason":"blocked by: [SERVICE_UNAVAILABLE/2/no master];"},"status":503}`,
		throttle: reply{status: http.StatusTooManyRequests, header: retryAfter1,
			body: `{"error":{"root_cause":[{"type":"es_rejected_execution_exception","reason":"rejected execution of coordinating operation"}],"type":"es_rejected_execution_exception","reason":"rejected execution of coordinating operation"},"status":429}`},
		serve: func(r *http.Request, _ []byte) reply {
			switch {
			case r.Method == http.MethodPut && r.URL.Path == "/books/_doc/1":
				return reply{status: http.StatusCreated,
					body: `{"_index":"books","_id":"1","_version":1,"result":"created","_shards":{"total":2,"successful":1,"failed":0},"_seq_no":0,"_primary_term":1}`}
			case r.Method == http.MethodPost && r.URL.Path == "/books/_doc":
				return reply{status: http.StatusCreated,
					body: `{"_index":"books","_id":"Yx8mKZoBq3Ws1pRtE0aF","_version":1,"result":"created","_shards":{"total":2,"successful":1,"failed":0},"_seq_no":1,"_primary_term":1}`}
			case r.Method == http.MethodGet && r.URL.Path == "/books/_doc/1":
				return reply{status: http.StatusOK,
					body: `{"_index":"books","_id":"1","_version":1,"_seq_no":0,"_primary_term":1,"found":true,"_source":{"title":"Dune"}}`}
			}
			return reply{status: http.StatusNotFound, body: fmt.Sprintf(`{"error":"no handler found for uri [%s] and method [%s]"}`, r.URL.Path, r.Method)}
		},
		header: func(h http.Header, _ int, _ string) {
			h.Set("Content-Type", "application/vnd.elasticsearch+json;compatible-with=8")
			h.Set("X-Elastic-Product", "Elasticsearch")
		},
	}.start(s)
}

// newElasticsearchClient returns a client of srv whose requests go through
// rt, with the client's own retries off unless ownRetries.
func newElasticsearchClient(t testing.TB, srv *httptest.Server, rt http.RoundTripper, ownRetries bool) *elasticsearch.Client {
	es, err := elasticsearch.NewClient(elasticsearch.Config{
		Addresses:    []string{srv.URL},
		Transport:    rt,
		DisableRetry: !ownRetries,
	})
	if err != nil {
		t.Fatalf("elasticsearch.NewClient: %v", err)
	}
	return es
}

// esStatusError is an Elasticsearch answer that is not a success. The
// client reports those in its Response, not as an error.
type esStatusError struct{ status int }

func (e *esStatusError) Error() string { return fmt.Sprintf("elasticsearch answered %d", e.status) }

// esBody returns the decoded body of a successful answer, an
// *esStatusError for any other, or the client's error.
func esBody(res *esapi.Response, err error) (map[string]any, error) {
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.IsError() {
		return nil, &esStatusError{res.StatusCode}
	}
	var out map[string]any
	err = json.NewDecoder(res.Body).Decode(&out)
	return out, err
}

func esStatus(err error) int {
	var se *esStatusError
	if errors.As(err, &se) {
		return se.status
	}
	return 0
}

func indexDune(ctx context.Context, es *elasticsearch.Client, id string) error {
	opts := []func(*esapi.IndexRequest){es.Index.WithContext(ctx)}
	if id != "" {
		opts = append(opts, es.Index.WithDocumentID(id))
	}
	out, err := esBody(es.Index("books", strings.NewReader(`{"title":"Dune"}`), opts...))
	if err == nil && out["result"] != "created" {
		return fmt.Errorf("Index result = %v; want created", out["result"])
	}
	return err
}

func TestElasticsearchScenarios(t *testing.T) {
	setup := calls(newElasticsearchFake, func(t *testing.T, srv *httptest.Server, rt http.RoundTripper) *elasticsearch.Client {
		return newElasticsearchClient(t, srv, rt, false)
	})
	runScenarios(t, []target{{
		name:       "Index PUT with id",
		policy:     policy.Standard,
		replayable: true,
		retryAfter: true,
		setup:      setup(func(ctx context.Context, es *elasticsearch.Client) error { return indexDune(ctx, es, "1") }),
		status:     esStatus,
	}, {
		// Indexing without an id makes a new document each time it is
		// processed, so it is sent again only after a throttle.
		name:       "Index POST without id",
		policy:     policy.Standard,
		replayable: false,
		retryAfter: true,
		setup:      setup(func(ctx context.Context, es *elasticsearch.Client) error { return indexDune(ctx, es, "") }),
		status:     esStatus,
	}, {
		name:       "Get",
		policy:     policy.Standard,
		replayable: true,
		retryAfter: true,
		setup: setup(func(ctx context.Context, es *elasticsearch.Client) error {
			out, err := esBody(es.Get("books", "1", es.Get.WithContext(ctx)))
			if err == nil && out["found"] != true {
				return fmt.Errorf("Get found = %v; want true", out["found"])
			}
			return err
		}),
		status: esStatus,
	}})
}

// TestElasticsearchOwnRetries shows why the client's own retries are turned
// off. By default it sends a request up to 4 times (MaxRetries 3) after a
// 502, 503 or 504 and after any transport error, a POST included: under the
// Transport, a persistent 503 costs 4 x 3 hits, and a dropped connection
// makes it index a document without id twice.
func TestElasticsearchOwnRetries(t *testing.T) {
	tests := []struct {
		name     string
		id       string
		faults   []fault
		wantHits int
	}{
		{"persistent 503 on PUT", "1", repeat(unavailable, 20), 12},
		{"dropped connection on POST", "", []fault{hangUp}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newScript(tt.faults...)
			srv := newElasticsearchFake(s)
			defer srv.Close()
			r := newRig(t, policy.Standard())
			es := newElasticsearchClient(t, srv, r.rt, true)

			_ = indexDune(context.Background(), es, tt.id)

			if got := len(s.Hits()); got != tt.wantHits {
				t.Errorf("server saw %d hits; want %d", got, tt.wantHits)
			}
		})
	}
}
