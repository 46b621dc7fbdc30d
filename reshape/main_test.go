package reshape

import (
	"testing"

	"uraid/internal/testutil"
)

// defaultChecks is how many random cases each property test runs unless
// -rapid.checks or RAPID_CHECKS asks for another. The model test walks whole
// reshapes with a crash at every step, so it runs a fraction of them (see
// modelChecks); together they stay within seconds under the race detector.
const defaultChecks = 500

func TestMain(m *testing.M) { testutil.RapidMain(m, defaultChecks) }
