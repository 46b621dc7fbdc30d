// Command uraid creates, assembles and inspects uraid arrays.
package main

import (
	"os"
)

func main() {
	os.Exit(run(os.Args[1:]))
}
