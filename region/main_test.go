package region

import (
	"testing"

	"uraid/internal/testutil"
)

// defaultChecks is how many random cases each property test runs unless
// -rapid.checks or RAPID_CHECKS asks for another number. The map guards
// user data, so rapid's default of 100 is too few; each case of the model
// test is an interleaving of up to 200 steps, so fewer are needed than
// mapping's 10000, and the rules that only long, specific interleavings
// reach are pinned by directed tests too. Before changing the map, run
// RAPID_CHECKS=20000 go test -run Model ./region.
const defaultChecks = 2000

func TestMain(m *testing.M) { testutil.RapidMain(m, defaultChecks) }

var testUUID = [16]byte{0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0x47, 0xa8, 0x89, 0xaa, 0xab, 0xac, 0xad, 0xae, 0xaf, 0xb0}
