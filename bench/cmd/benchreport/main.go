// Command benchreport turns a benchrun console log into the committed
// results: it extracts the JSON, writes it out, prints the target and ratio
// tables in Markdown, draws the plots, and can print the ratios beside
// those of a reference run (make bench-quick against docs/bench/results.json).
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"uraid/bench"
)

// The markers benchrun prints around its JSON.
const (
	beginMarker = "=== benchrun results begin ==="
	endMarker   = "=== benchrun results end ==="
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		logPath = flag.String("log", "", "benchrun console logs to read the results from, comma-separated; later ones redo scenarios of earlier ones")
		in      = flag.String("in", "", "results JSON to read instead of a log")
		out     = flag.String("out", "", "write the results JSON here")
		ref     = flag.String("ref", "", "reference results JSON to print the ratios beside")
		plots   = flag.String("plots", "", "directory to draw the PNG plots in")
	)
	flag.Parse()
	var s *bench.Suite
	switch {
	case *logPath != "":
		// Later logs redo scenarios of earlier ones.
		for _, p := range strings.Split(*logPath, ",") {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			next, err := bench.Extract(b, beginMarker, endMarker)
			if err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			if s == nil {
				s = next
			} else {
				s.Merge(next)
			}
		}
	case *in != "":
		b, err := os.ReadFile(*in)
		if err != nil {
			return err
		}
		if s, err = bench.Extract(append(append([]byte(beginMarker), b...), endMarker...), beginMarker, endMarker); err != nil {
			return fmt.Errorf("%s: %w", *in, err)
		}
	default:
		return fmt.Errorf("need -log or -in")
	}
	if *out != "" {
		if err := writeJSON(*out, s); err != nil {
			return err
		}
	}
	var refSuite *bench.Suite
	if *ref != "" {
		b, err := os.ReadFile(*ref)
		if err != nil {
			fmt.Fprintf(os.Stderr, "benchreport: no reference to compare with: %v\n", err)
		} else if refSuite, err = bench.Extract(append(append([]byte(beginMarker), b...), endMarker...), beginMarker, endMarker); err != nil {
			return fmt.Errorf("%s: %w", *ref, err)
		}
	}
	fmt.Println("## Targets")
	fmt.Println()
	s.WriteTargets(os.Stdout)
	fmt.Println()
	fmt.Println("## uraid/md ratios of medians")
	fmt.Println()
	s.WriteRatios(os.Stdout, refSuite)
	if *plots != "" {
		if err := drawPlots(s, *plots); err != nil {
			return err
		}
	}
	return nil
}
