package sdk_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/elastic/go-elasticsearch/v8"
	"github.com/google/go-github/v83/github"
	"github.com/stripe/stripe-go/v85"

	"github.com/retrytransport/retrytransport"
	"github.com/retrytransport/retrytransport/policy"
)

// Each example talks to a local fake of the API that fails the first
// attempts. skipWaits makes the Transport's waits instant, so that the
// examples run at once; leave it out in real code.
var skipWaits = retrytransport.WithClock(nil, func(ctx context.Context, _ time.Duration) error { return ctx.Err() })

// The AWS SDK's own retryer is replaced by aws.NopRetryer, and the
// Transport retries every operation, POSTs included: AWS operations are
// idempotent by design.
func Example_awsDynamoDB() {
	fake := newScript(unavailable, throttled) // a 503, then a ThrottlingException
	srv := newDynamoDBFake(fake)
	defer srv.Close()

	p := policy.Standard()
	p.RetryNonIdempotent = true
	rt := retrytransport.New(nil, retrytransport.WithPolicy(p), skipWaits)
	defer rt.CloseIdleConnections()

	client := dynamodb.NewFromConfig(aws.Config{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "SECRET", ""),
		HTTPClient:   &http.Client{Transport: rt},
		Retryer:      func() aws.Retryer { return aws.NopRetryer{} },
		BaseEndpoint: aws.String(srv.URL), // only to reach the fake
	})
	out, err := client.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String("people"),
		Key:       map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "42"}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(out.Item["name"].(*types.AttributeValueMemberS).Value, "after", len(fake.Hits()), "attempts")
	// Output: Ada after 3 attempts
}

// stripe-go's retries are turned off with MaxNetworkRetries 0. It still
// puts an Idempotency-Key on every POST, so the Transport may send a
// customer creation again after a dropped connection.
func Example_stripe() {
	fake := newScript(hangUp) // the first connection is dropped unanswered
	srv := newStripeFake(fake)
	defer srv.Close()

	rt := retrytransport.New(nil, retrytransport.WithPolicy(policy.Standard()), skipWaits)
	defer rt.CloseIdleConnections()

	backends := stripe.NewBackendsWithConfig(&stripe.BackendConfig{
		HTTPClient:        &http.Client{Transport: rt, Timeout: 80 * time.Second},
		MaxNetworkRetries: stripe.Int64(0),
		URL:               stripe.String(srv.URL), // only to reach the fake
		LeveledLogger:     &stripe.LeveledLogger{Level: stripe.LevelNull},
	})
	sc := stripe.NewClient("sk_test_123", stripe.WithBackends(backends))
	cus, err := sc.V1Customers.Create(context.Background(), &stripe.CustomerCreateParams{
		Email: stripe.String("ada@example.com"),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	hits := fake.Hits()
	fmt.Println(cus.ID, "after", len(hits), "attempts; same Idempotency-Key:",
		hits[0].Header.Get("Idempotency-Key") == hits[1].Header.Get("Idempotency-Key"))
	// Output: cus_123 after 2 attempts; same Idempotency-Key: true
}

// go-github makes one attempt per call, so it only needs the Transport in
// its http.Client.
func Example_gitHub() {
	fake := newScript(throttled) // a secondary rate limit: 429, Retry-After: 1
	srv := newGitHubFake(fake)
	defer srv.Close()

	var waits []time.Duration // instead of skipWaits: record the waits, skip them
	rt := retrytransport.New(nil,
		retrytransport.WithPolicy(policy.Standard()),
		retrytransport.WithClock(nil, func(ctx context.Context, d time.Duration) error {
			waits = append(waits, d)
			return ctx.Err()
		}),
	)
	defer rt.CloseIdleConnections()

	client, err := github.NewClient(&http.Client{Transport: rt}).
		WithEnterpriseURLs(srv.URL, srv.URL) // only to reach the fake
	if err != nil {
		fmt.Println(err)
		return
	}
	repo, _, err := client.Repositories.Get(context.Background(), "octocat", "hello-world")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(repo.GetFullName(), "after", len(fake.Hits()), "attempts, waiting", waits)
	// Output: octocat/hello-world after 2 attempts, waiting [1s]
}

// The Elasticsearch client's retries are turned off with DisableRetry, and
// the Transport is its Transport. Indexing with a document id is a PUT,
// sent again after a 503; indexing without one is a POST, which is not.
func Example_elasticsearch() {
	fake := newScript(unavailable, unavailable)
	srv := newElasticsearchFake(fake)
	defer srv.Close()

	rt := retrytransport.New(nil, retrytransport.WithPolicy(policy.Standard()), skipWaits)
	defer rt.CloseIdleConnections()

	es, err := elasticsearch.NewClient(elasticsearch.Config{
		Addresses:    []string{srv.URL},
		Transport:    rt,
		DisableRetry: true,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := es.Index("books", strings.NewReader(`{"title":"Dune"}`), es.Index.WithDocumentID("1"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer res.Body.Close()
	fmt.Println(res.Status(), "after", len(fake.Hits()), "attempts")
	// Output: 201 Created after 3 attempts
}
