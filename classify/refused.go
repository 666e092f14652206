package classify

// RefusedStream reports whether err proves that an HTTP/2 server refused
// the request's stream before processing it: a REFUSED_STREAM, or a GOAWAY
// whose last processed stream comes before it. Unlike the other proofs
// that a request was not processed (a dial or DNS failure, a refused
// connection), it comes after the request's bytes were sent, so it is the
// one such proof that holds for an attempt that obtained a connection.
func RefusedStream(err error) bool { return err != nil && isHTTP2Unprocessed(err) }
