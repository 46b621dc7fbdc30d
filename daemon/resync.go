package daemon

import (
	"fmt"
	"os"

	"uraid/raid"
)

// startResync is where a resync of an unclean mirror will start, once the device serves: the
// copies may disagree where writes were in flight when the last run ended (a daemon killed, a
// device failed), and status says "unclean: resync pending" until they are brought back in step.
// Doing so needs to know which regions had writes in flight: the region map (package region)
// records that write intent on the members, and after its Load every region dirty there needs
// resync. Until the array keeps that map, the resync stays pending and this only says so.
func startResync(a *raid.Array) {
	if !a.Unclean() || !a.Superblock().Level.Redundant() {
		return
	}
	fmt.Fprintf(os.Stderr, "uraid: array %s: unclean: resync pending (the copies may disagree where writes were in flight)\n", a.Name)
}
