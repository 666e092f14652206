package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// awsTransport runs an aws-sdk-go-v2 retryer (retry.Standard or
// retry.AdaptiveMode) around a plain RoundTripper. The SDK's retryers are
// not RoundTrippers: its Attempt middleware (aws/retry/middleware.go) runs
// the loop. RoundTrip is that loop, step for step, in the SDK's legacy
// retry behaviour (AWS_NEW_RETRIES_2026 unset):
//
//   - before each attempt, GetAttemptToken (adaptive mode waits here on its
//     client-side rate limiter);
//   - after it, the previous retry token's release and then the attempt
//     token's release, both with the attempt's error (a success refunds the
//     retry cost; standard mode adds NoRetryIncrement; adaptive mode feeds
//     its rate limiter);
//   - on an error: IsErrorRetryable, then the MaxAttempts check, then
//     GetRetryToken (the retry quota), then RetryDelay(attempt, err) and a
//     sleep that the context can cut short.
//
// As in the SDK, a transport error becomes a *smithyhttp.RequestSendError
// (a *smithy.CanceledError when the context is done), and a response
// outside 2xx an *awshttp.ResponseError wrapping a smithy.GenericAPIError
// whose code is the X-Amzn-ErrorType header, read as the restjson
// deserializers read it first ("UnknownError" when absent).
//
// What differs from the SDK, because this is a RoundTripper for a plain
// HTTP API rather than a generated client:
//
//   - when it stops on an error response, it returns that response with a
//     nil error and its body unread (the http.RoundTripper contract), where
//     the SDK returns the error (a *retry.MaxAttemptsError at the attempt
//     limit);
//   - error bodies are not parsed, only the header; a response to be
//     retried is drained and closed, as the SDK's deserializers do;
//   - bodies are rewound with Request.GetBody, the SDK's RewindStream;
//   - no signing, no Amz-Sdk-Request header, no clock-skew correction, no
//     logging, metrics or tracing.
type awsTransport struct {
	base    http.RoundTripper
	retryer aws.RetryerV2
}

// RoundTrip sends req as the SDK's Attempt middleware would.
func (t *awsTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	maxAttempts := t.retryer.MaxAttempts()
	releaseRetryToken := nopRelease
	sent := false // whether req.Body was handed to the base transport
	defer func() {
		if !sent && req.Body != nil {
			req.Body.Close()
		}
	}()
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		releaseAttemptToken, err := t.retryer.GetAttemptToken(ctx)
		if err != nil {
			return nil, fmt.Errorf("failed to get retry Send token, %w", err)
		}
		areq, err := attemptRequest(req, attempt)
		if err != nil {
			return nil, fmt.Errorf("failed to rewind transport stream for retry, %w", err)
		}
		sent = true
		resp, err := t.base.RoundTrip(areq)
		opErr := operationError(ctx, resp, err)

		_ = releaseRetryToken(opErr)
		_ = releaseAttemptToken(opErr)
		if opErr == nil {
			return resp, nil
		}
		if !t.retryer.IsErrorRetryable(opErr) {
			if err != nil {
				err = opErr
			}
			return resp, err
		}
		if maxAttempts > 0 && attempt >= maxAttempts {
			if err != nil {
				err = &retry.MaxAttemptsError{Attempt: attempt, Err: opErr}
			}
			return resp, err
		}
		var tokenErr error
		releaseRetryToken, tokenErr = t.retryer.GetRetryToken(ctx, opErr)
		if tokenErr != nil {
			if err != nil {
				err = errors.Join(opErr, tokenErr)
			}
			return resp, err
		}
		delay, delayErr := t.retryer.RetryDelay(attempt, opErr)
		if delayErr != nil {
			discard(resp)
			return nil, delayErr
		}
		discard(resp)
		if err := sleep(ctx, delay); err != nil {
			return nil, &aws.RequestCanceledError{Err: err}
		}
	}
}

// operationError is the error the SDK's stack would give the retry loop
// for one attempt: nil for a 2xx response.
func operationError(ctx context.Context, resp *http.Response, err error) error {
	if err != nil {
		if ctx.Err() != nil {
			return &smithy.CanceledError{Err: ctx.Err()}
		}
		return &smithyhttp.RequestSendError{Err: err}
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	code, _, _ := strings.Cut(resp.Header.Get("X-Amzn-ErrorType"), ":")
	if code == "" {
		code = "UnknownError"
	}
	return &awshttp.ResponseError{ResponseError: &smithyhttp.ResponseError{
		Response: &smithyhttp.Response{Response: resp},
		Err:      &smithy.GenericAPIError{Code: code, Message: resp.Status},
	}}
}

// attemptRequest returns req for the first attempt, and a shallow copy
// with a fresh body from GetBody for later ones.
func attemptRequest(req *http.Request, attempt int) (*http.Request, error) {
	if attempt == 1 || req.Body == nil || req.Body == http.NoBody {
		return req, nil
	}
	if req.GetBody == nil {
		return nil, errors.New("request body cannot be rewound")
	}
	body, err := req.GetBody()
	if err != nil {
		return nil, err
	}
	r := *req
	r.Body = body
	return &r, nil
}

func nopRelease(error) error { return nil }

// sleep waits for d or until ctx is done, as the SDK's SleepWithContext.
func sleep(ctx context.Context, d time.Duration) error {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// discard drains and closes a response that will not be returned.
func discard(resp *http.Response) {
	if resp != nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}
