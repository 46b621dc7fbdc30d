// Command benchreport turns a benchrun console log into the committed
// results: it extracts the JSON, writes it out, prints the target and ratio
// tables in Markdown, draws the plots, and can print the ratios beside
// those of a reference run (make bench-quick against docs/bench/results.json).
// With -in instead of -log it works from a results JSON alone, so the
// tables and plots of a committed run can be drawn again without running
// anything (from bench/, which is a module of its own):
//
//	cd bench && go run ./cmd/benchreport -in ../docs/bench/results.json -plots ../docs/img
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
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
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("benchreport", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		logPath = fs.String("log", "", "benchrun console logs to read the results from, comma-separated; later ones redo scenarios of earlier ones")
		in      = fs.String("in", "", "results JSON to read instead of a log (docs/bench/results.json: draw a committed run again)")
		out     = fs.String("out", "", "write the results JSON here")
		ref     = fs.String("ref", "", "reference results JSON to print the ratios beside")
		plots   = fs.String("plots", "", "directory to draw the PNG plots in")
		dpi     = fs.Int("dpi", 144, "resolution of the plots, dots per inch")
	)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dpi < 24 || *dpi > 1200 {
		return fmt.Errorf("-dpi %d: give a resolution from 24 to 1200 dots per inch (the committed plots use 144)", *dpi)
	}
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
		return fmt.Errorf("need -log (a benchrun console log) or -in (a results JSON such as docs/bench/results.json)")
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
			fmt.Fprintf(stderr, "benchreport: no reference to compare with: %v\n", err)
		} else if refSuite, err = bench.Extract(append(append([]byte(beginMarker), b...), endMarker...), beginMarker, endMarker); err != nil {
			return fmt.Errorf("%s: %w", *ref, err)
		}
	}
	fmt.Fprintln(stdout, "## Targets")
	fmt.Fprintln(stdout)
	s.WriteTargets(stdout)
	fmt.Fprintln(stdout)
	fmt.Fprintln(stdout, "## uraid/md ratios of medians")
	fmt.Fprintln(stdout)
	s.WriteRatios(stdout, refSuite)
	fmt.Fprintln(stdout)
	fmt.Fprintln(stdout, "## (j) per-request cost")
	fmt.Fprintln(stdout)
	s.WriteCost(stdout)
	if *plots != "" {
		if err := drawPlots(s, *plots, *dpi); err != nil {
			return err
		}
	}
	return nil
}
