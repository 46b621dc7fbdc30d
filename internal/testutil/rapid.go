package testutil

import (
	"flag"
	"fmt"
	"os"
	"testing"
)

// RapidMain is the TestMain of a package whose rapid property tests guard user data, for which
// rapid's default of 100 cases is too few: it runs the tests with checks cases each, unless
// -rapid.checks or RAPID_CHECKS asks for another number. The package's tests must import
// pgregory.net/rapid, which defines the flag.
func RapidMain(m *testing.M, checks int) {
	flag.Parse()
	set := os.Getenv("RAPID_CHECKS") != ""
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "rapid.checks" })
	if !set {
		if err := flag.Set("rapid.checks", fmt.Sprint(checks)); err != nil {
			fmt.Fprintln(os.Stderr, "testutil.RapidMain:", err)
			os.Exit(2)
		}
	}
	os.Exit(m.Run())
}
