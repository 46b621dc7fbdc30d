package mapping

import (
	"testing"

	"uraid/internal/testutil"
)

// defaultChecks is how many random cases each property test runs unless
// -rapid.checks or RAPID_CHECKS asks for another number. The planner guards
// user data, so rapid's default of 100 is too few.
const defaultChecks = 10000

func TestMain(m *testing.M) { testutil.RapidMain(m, defaultChecks) }
