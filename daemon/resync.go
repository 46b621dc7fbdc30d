package daemon

import (
	"fmt"
	"os"

	"uraid/raid"
)

// startResync is where a resync of an unclean mirror will start, once the device serves: the
// copies may disagree where writes were in flight when the last run ended, and status says
// "unclean: resync pending" until they are brought back in step. Bringing them back needs to
// know which regions had writes in flight (a write-intent map); until the array keeps one, the
// resync stays pending and this only says so.
func startResync(a *raid.Array) {
	if !a.Unclean() || !a.Superblock().Level.Redundant() {
		return
	}
	fmt.Fprintf(os.Stderr, "uraid: array %s: unclean: resync pending (the copies may disagree where writes were in flight)\n", a.Name)
}
