package mapping

import (
	"flag"
	"os"
	"testing"
)

// defaultChecks is how many random cases each property test runs unless
// -rapid.checks or RAPID_CHECKS asks for another number. The planner guards
// user data, so rapid's default of 100 is too few.
const defaultChecks = "10000"

func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "rapid.checks" })
	if _, env := os.LookupEnv("RAPID_CHECKS"); !set && !env {
		if err := flag.Set("rapid.checks", defaultChecks); err != nil {
			panic(err)
		}
	}
	os.Exit(m.Run())
}
