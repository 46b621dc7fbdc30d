package main

import (
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"uraid/daemon"
)

// Shell completion (uraid completion bash|zsh|fish|powershell): array names where a command
// takes one, and the values of the flags that take a word.

// completeArrayNames offers the arrays that have a socket or a record, as the first argument.
// It asks no daemon anything: completion must be instant even when one hangs.
func completeArrayNames(_ *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return arrayNames(toComplete), cobra.ShellCompDirectiveNoFileComp
}

// completeArrayThenFiles offers array names first and member paths (files) after them.
func completeArrayThenFiles(_ *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveDefault
	}
	return arrayNames(toComplete), cobra.ShellCompDirectiveNoFileComp
}

func arrayNames(prefix string) []cobra.Completion {
	names, _ := daemon.Running()
	recs, _ := daemon.Records()
	for _, r := range recs {
		names = append(names, r.Name)
	}
	slices.Sort(names)
	names = slices.Compact(names)
	var out []cobra.Completion
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	return out
}

// fixedWords completes a flag from a fixed list, each with what it means.
func fixedWords(words ...string) cobra.CompletionFunc {
	return func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return words, cobra.ShellCompDirectiveNoFileComp
	}
}

var (
	levelWords   = []string{"linear\tconcatenation", "0\tstriping, no redundancy", "1\tmirror", "10\tstriped mirror"}
	layoutWords  = []string{"n2\tnear: copies side by side", "f2\tfar: second copy in the far half", "o2\toffset: copy in the next stripe"}
	discardWords = []string{"sync\ta discard completes once every member trimmed", "async\ta discard completes once queued"}
)

// registerServeCompletion completes the serving flags that take a word.
func registerServeCompletion(cmd *cobra.Command) {
	_ = cmd.RegisterFlagCompletionFunc("discard", fixedWords(discardWords...))
}
