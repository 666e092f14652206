package backoff

// Phase is one of the four phases of an SNS delivery policy (docs/sns.md), in
// the order a Schedule goes through them, or PhasePast for retries beyond
// the policy.
type Phase int

const (
	PhaseImmediate   Phase = iota // NumNoDelayRetries retries without delay
	PhasePreBackoff               // NumMinDelayRetries retries at MinDelay
	PhaseBackoff                  // the retries whose delay grows from MinDelay to MaxDelay
	PhasePostBackoff              // NumMaxDelayRetries retries at MaxDelay
	PhasePast                     // retries past NumRetries; they wait MaxDelay
)

var phaseNames = [...]string{"immediate", "pre-backoff", "backoff", "post-backoff", "past the policy"}

// String returns the phase's name as SNS's guide writes it, such as
// "pre-backoff".
func (p Phase) String() string {
	if p >= 0 && int(p) < len(phaseNames) {
		return phaseNames[p]
	}
	return "phase(?)"
}

// PhaseOf returns the phase of retry n (1 before the second attempt), with
// the counts normalised as the Schedule's field comments say. For the
// backoff phase it also returns n's position i in it, from 1, and the
// phase's length k; both are 0 for the other phases.
func (s Schedule) PhaseOf(retry int) (ph Phase, i, k int) {
	return s.resolve().phase(max(retry, 1))
}
