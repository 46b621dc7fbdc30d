package main

import (
	"encoding/json"
	"io"

	"uraid/daemon"
)

// writeJSON prints v as the JSON views do: indented, one value, a newline after it.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// stamped is the status as this build prints it: a daemon of an older build may have answered
// without the schema, but the output is this build's.
func stamped(st daemon.Status) daemon.Status {
	st.Schema = daemon.Schema
	return st
}

// entriesJSON is what status --json prints for entries: each running array's status, and for
// each array or device no daemon answers for, what it left (daemon.Leftover), in the same order
// as the text view.
func entriesJSON(entries []daemon.Entry) []any {
	out := []any{}
	for _, e := range entries {
		if e.Status != nil {
			out = append(out, stamped(*e.Status))
		} else {
			out = append(out, e.Leftover())
		}
	}
	return out
}
