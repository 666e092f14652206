package backoff

// Bridges to unexported code for the tests in package backoff_test.
var (
	Grow                 = grow
	FromFloat            = fromFloat
	Draw                 = draw
	DecorrelatedMaxDraws = decorrelatedMaxDraws
)
