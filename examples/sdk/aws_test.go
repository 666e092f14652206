package sdk_test

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/retrytransport/retrytransport/policy"
)

// newDynamoDBFake starts a fake DynamoDB (JSON 1.0 protocol: every
// operation is a POST to / named by X-Amz-Target) that serves s. PutItem
// answers {} and GetItem an item with id "42" and name "Ada". Its throttle
// is DynamoDB's: a 400 whose __type ends in #ThrottlingException, with no
// Retry-After.
func newDynamoDBFake(s *script) *httptest.Server {
	return api{
		unavailable: `{"__type":"com.amazon.coral.availability#ServiceUnavailableException","message":"Service unavailable"}`,
		throttle: reply{status: http.StatusBadRequest,
			body: `{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException","message":"Rate of requests exceeds the allowed throughput."}`},
		serve: func(r *http.Request, _ []byte) reply {
			switch r.Header.Get("X-Amz-Target") {
			case "DynamoDB_20120810.PutItem":
				return reply{status: http.StatusOK, body: `{}`}
			case "DynamoDB_20120810.GetItem":
				return reply{status: http.StatusOK, body: `{"Item":{"id":{"S":"42"},"name":{"S":"Ada"}}}`}
			}
			return reply{status: http.StatusBadRequest, body: `{"__type":"com.amazon.coral.service#UnknownOperationException"}`}
		},
		header: func(h http.Header, n int, body string) {
			h.Set("Content-Type", "application/x-amz-json-1.0")
			h.Set("X-Amzn-Requestid", fmt.Sprintf("REQ%04d", n))
			h.Set("X-Amz-Crc32", fmt.Sprint(crc32.ChecksumIEEE([]byte(body))))
		},
	}.start(s)
}

// dynamoDBPolicy is the policy for AWS APIs: Standard, with every
// operation treated as idempotent, since AWS designs them so (DynamoDB's
// JSON protocol sends even GetItem as a POST).
func dynamoDBPolicy() policy.Policy {
	p := policy.Standard()
	p.RetryNonIdempotent = true
	return p
}

// newDynamoDBClient returns a DynamoDB client whose requests go through
// hc to srv, with the SDK's own retryer from newRetryer.
func newDynamoDBClient(srv *httptest.Server, hc *http.Client, newRetryer func() aws.Retryer) *dynamodb.Client {
	return dynamodb.NewFromConfig(aws.Config{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "SECRET", ""),
		HTTPClient:   hc,
		Retryer:      newRetryer,
		BaseEndpoint: aws.String(srv.URL),
	})
}

func nopRetryer() aws.Retryer { return aws.NopRetryer{} }

func putAda(ctx context.Context, c *dynamodb.Client) error {
	_, err := c.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String("people"),
		Item: map[string]types.AttributeValue{
			"id":   &types.AttributeValueMemberS{Value: "42"},
			"name": &types.AttributeValueMemberS{Value: "Ada"},
		},
	})
	return err
}

func getAda(ctx context.Context, c *dynamodb.Client) (string, error) {
	out, err := c.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String("people"),
		Key:       map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "42"}},
	})
	if err != nil {
		return "", err
	}
	name, _ := out.Item["name"].(*types.AttributeValueMemberS)
	if name == nil {
		return "", fmt.Errorf("GetItem returned no name: %v", out.Item)
	}
	return name.Value, nil
}

// awsStatus returns the HTTP status of an AWS SDK operation error.
func awsStatus(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

// checkNopAttemptHeader checks that, with aws.NopRetryer, every hit says
// it is the SDK's only attempt: our replays resend the SDK's header as is.
func checkNopAttemptHeader(t *testing.T, hits []hit) {
	t.Helper()
	for i, h := range hits {
		if got := h.Header.Get("Amz-Sdk-Request"); got != "attempt=1; max=1" {
			t.Errorf("hit %d: amz-sdk-request = %q; want %q", i+1, got, "attempt=1; max=1")
		}
	}
}

func TestDynamoDBScenarios(t *testing.T) {
	setup := calls(newDynamoDBFake, func(_ *testing.T, srv *httptest.Server, rt http.RoundTripper) *dynamodb.Client {
		return newDynamoDBClient(srv, &http.Client{Transport: rt}, nopRetryer)
	})
	runScenarios(t, []target{{
		name:       "PutItem",
		policy:     dynamoDBPolicy,
		replayable: true,
		setup:      setup(putAda),
		status:     awsStatus,
		checkHits:  checkNopAttemptHeader,
	}, {
		name:       "GetItem",
		policy:     dynamoDBPolicy,
		replayable: true,
		setup: setup(func(ctx context.Context, c *dynamodb.Client) error {
			name, err := getAda(ctx, c)
			if err == nil && name != "Ada" {
				return fmt.Errorf("GetItem name = %q; want Ada", name)
			}
			return err
		}),
		status:    awsStatus,
		checkHits: checkNopAttemptHeader,
	}})
}

var signedHeadersRE = regexp.MustCompile(`SignedHeaders=([^,]+)`)

// TestAWSAttemptHeaderIsSigned records the amz-sdk-request header of each
// hit, and shows that SigV4 signs it: a transport cannot rewrite it without
// breaking the signature, only replay it.
func TestAWSAttemptHeaderIsSigned(t *testing.T) {
	s := newScript(unavailable, unavailable)
	srv := newDynamoDBFake(s)
	defer srv.Close()
	r := newRig(t, dynamoDBPolicy())
	c := newDynamoDBClient(srv, &http.Client{Transport: r.rt}, nopRetryer)

	if _, err := getAda(context.Background(), c); err != nil {
		t.Fatalf("GetItem: %v", err)
	}
	for i, h := range s.Hits() {
		var signed string
		if m := signedHeadersRE.FindStringSubmatch(h.Header.Get("Authorization")); m != nil {
			signed = m[1]
		}
		t.Logf("hit %d: amz-sdk-request %q, SignedHeaders=%s", i+1, h.Header.Get("Amz-Sdk-Request"), signed)
		if !strings.Contains(";"+signed+";", ";amz-sdk-request;") {
			t.Errorf("hit %d: SignedHeaders=%q lacks amz-sdk-request", i+1, signed)
		}
	}
	checkNopAttemptHeader(t, s.Hits())
}

// TestAWSDefaultRetryerIsNotMultiplied leaves the SDK's own retryer on and
// sends one call to a DynamoDB that answers 503 forever. The server must
// see at most max(ours, the SDK's) attempts, not their product: the
// Transport is to read the SDK's amz-sdk-request header (attempt=N; max=M)
// and not retry on its own what the SDK will retry. The SDK's backoff is
// zero so that nothing sleeps for real.
func TestAWSDefaultRetryerIsNotMultiplied(t *testing.T) {
	noWait := func(o *retry.StandardOptions) {
		o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
	}
	tests := []struct {
		name   string
		sdkMax int
		opts   []func(*retry.StandardOptions)
	}{
		{"retry.NewStandard", retry.DefaultMaxAttempts, []func(*retry.StandardOptions){noWait}},
		// DynamoDB's own default when no Retryer is configured: 4 attempts.
		{"DynamoDB default", 4, []func(*retry.StandardOptions){noWait, func(o *retry.StandardOptions) { o.MaxAttempts = 4 }}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newScript(repeat(unavailable, 50)...)
			srv := newDynamoDBFake(s)
			defer srv.Close()
			r := newRig(t, dynamoDBPolicy())
			c := newDynamoDBClient(srv, &http.Client{Transport: r.rt},
				func() aws.Retryer { return retry.NewStandard(tt.opts...) })

			err := putAda(context.Background(), c)

			if awsStatus(err) != http.StatusServiceUnavailable {
				t.Errorf("PutItem error = %v; want status 503", err)
			}
			var headers []string
			for _, h := range s.Hits() {
				headers = append(headers, h.Header.Get("Amz-Sdk-Request"))
			}
			t.Logf("amz-sdk-request of each hit: %q", headers)
			if want := max(3, tt.sdkMax); len(headers) > want {
				t.Errorf("server saw %d hits for one PutItem; want at most max(3, %d) = %d, not %d x 3",
					len(headers), tt.sdkMax, want, tt.sdkMax)
			}
		})
	}
}
