// Schedule prints the retry schedule of a policy: for each attempt, the
// wait before it and the time waited since the first attempt, each as the
// range the backoff's jitter allows. It marks the waits that MaxDelay cuts
// and the attempts that MaxTotalTime (less a TerminationBuffer) or
// MaxTotalWait stop, and prints a second table for a ThrottleBackoff and
// one for a Penalty, as if every failure were a throttle or signalled the
// penalty. It reads a preset of package policy or a JSON policy file, and
// can write an SVG chart of the four backoff functions of Amazon SNS
// delivery policies (docs/sns.md) in the case SNS's guide draws: 10
// retries from 5 s to 260 s.
//
// Run it from the module root:
//
//	go run ./examples/schedule                          # policy.Standard()
//	go run ./examples/schedule -preset sns-aws-managed  # any name of policy.PresetNames
//	go run ./examples/schedule -file policy.json        # policy.Load's schema
//	go run ./examples/schedule -file delivery.json      # an SNS delivery policy, detected
//	go run ./examples/schedule -svg sns-curves.svg      # also write the chart
//
// Flags:
//
//	-preset name  the preset to print (default standard); not with -file
//	-file path    a JSON policy in policy.Load's schema, or an SNS delivery
//	              policy for policy.LoadSNS, recognised by its members
//	              (healthyRetryPolicy, throttlePolicy, requestPolicy, http)
//	-sns          read -file with policy.LoadSNS whatever its members
//	-max n        print the first n attempts and a summary of the rest
//	              (default 20); 0 prints every attempt
//	-svg path     write the chart of the four SNS backoff functions to path
//
// The times are those of the policy alone: the attempts themselves take
// time too, which brings the end of MaxTotalTime closer than the table shows,
// while MaxTotalWait counts the waits alone, as the table does. Delays a
// server asks for (Retry-After, x-ms-retry-after-ms, ...) replace the
// backoff and are not shown. It uses no network.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/retrytransport/retrytransport/policy"
)

func main() {
	if err := run(os.Stdout, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "schedule:", err)
		os.Exit(1)
	}
}

// defaultMaxRows is how many attempts are printed when -max is not given:
// enough for every preset but the two SNS ones, whose tail is summarised.
const defaultMaxRows = 20

// run parses args, the command-line arguments without the program name,
// and prints the schedule they ask for to w; with -svg it also writes the
// chart. A -h or -help prints the usage to w and returns nil.
func run(w io.Writer, args []string) error {
	fs := flag.NewFlagSet("schedule", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // run reports errors itself, once
	preset := fs.String("preset", "standard", "the preset to print: one of "+strings.Join(policy.PresetNames(), ", "))
	file := fs.String("file", "", "a JSON policy file, in policy.Load's schema or an SNS delivery policy")
	sns := fs.Bool("sns", false, "read -file as an SNS delivery policy (policy.LoadSNS)")
	maxRows := fs.Int("max", defaultMaxRows, "print at most this many attempts, 0 for all")
	svg := fs.String("svg", "", "write an SVG chart of the four SNS backoff functions to this file")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(w)
			fmt.Fprintln(w, "usage: go run ./examples/schedule [-preset name | -file path [-sns]] [-max n] [-svg path]")
			fs.PrintDefaults()
			return nil
		}
		return fmt.Errorf("%w (run with -h for the flags)", err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (run with -h for the flags)", fs.Arg(0))
	}
	set := make(map[string]bool)
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case set["preset"] && set["file"]:
		return errors.New("-preset and -file exclude each other: give one")
	case set["sns"] && !set["file"]:
		return errors.New("-sns needs -file")
	case set["file"] && *file == "":
		return errors.New("-file needs a path")
	case *maxRows < 0:
		return fmt.Errorf("-max %d: want 0 (all) or more", *maxRows)
	}

	name := *preset
	var p policy.Policy
	var err error
	if set["file"] {
		name, p, err = loadFile(*file, *sns)
	} else {
		p, err = policy.Preset(*preset)
	}
	if err != nil {
		return err
	}
	printPolicy(w, name, p, *maxRows)

	if *svg != "" {
		var buf bytes.Buffer
		if err := writeChart(&buf, snsChart()); err != nil {
			return err
		}
		if err := os.WriteFile(*svg, buf.Bytes(), 0o644); err != nil {
			return fmt.Errorf("writing the chart: %w", err)
		}
		fmt.Fprintf(w, "\nWrote %s: the four SNS backoff functions, 10 retries from 5s to 260s.\n", *svg)
	}
	return nil
}

// loadFile reads the policy in the file at path with policy.LoadSNS if sns
// is set or the document is an object with a member that only an SNS
// delivery policy has (a subscription's healthyRetryPolicy,
// sicklyRetryPolicy, throttlePolicy or requestPolicy, or a topic's http),
// and with policy.Load otherwise. It returns the name to print for the
// policy.
func loadFile(path string, sns bool) (string, policy.Policy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", policy.Policy{}, err // *fs.PathError names the file
	}
	if !sns {
		var top map[string]json.RawMessage
		// The loaders skip a UTF-8 byte order mark; encoding/json does not.
		if json.Unmarshal(bytes.TrimPrefix(data, []byte("\xEF\xBB\xBF")), &top) == nil {
			for _, m := range []string{"healthyRetryPolicy", "sicklyRetryPolicy", "throttlePolicy", "requestPolicy", "http"} {
				if _, ok := top[m]; ok {
					sns = true
					break
				}
			}
		}
	}
	load, kind := policy.Load, "policy"
	if sns {
		load, kind = policy.LoadSNS, "SNS delivery policy"
	}
	p, err := load(bytes.NewReader(data))
	if err != nil {
		return "", policy.Policy{}, fmt.Errorf("%s (read as %s):\n%w", path, kind, err)
	}
	return fmt.Sprintf("%s (%s)", path, kind), p, nil
}
