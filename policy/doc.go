// Package policy describes what a retrying transport does for the requests
// of one host: a [Policy] value with presets for the AWS retry modes
// ([Standard], [Adaptive], [None]).
//
// A Policy is plain data. It holds no per-request state; the transport that
// uses it creates the quota buckets it needs, so one Policy value can serve
// many transports without them sharing anything by accident.
package policy
