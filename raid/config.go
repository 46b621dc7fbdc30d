package raid

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// The configuration file (/etc/uraid.conf) tells a scan what to read besides the block devices
// and, with ARRAY lines, which arrays to assemble:
//
//	# member files, one absolute path or glob a line
//	/var/lib/uraid/demo/m*
//	# an allow-list, mdadm.conf style: once any ARRAY line is there, only these arrays start
//	ARRAY data UUID=8d6f0a52-3c1e-4f55-9a0e-2f1b7c9d4e10
//	ARRAY demo UUID=0b7e4c1a-5d2f-4e3b-8a6c-1f9e2d3c4b5a devices=/var/lib/uraid/demo/m*
//
// '#' starts a comment. devices= is a comma-separated list of absolute paths or globs: they are
// read as the path lines are, and only devices they match may be members of that array.

// Config is what a configuration file says.
type Config struct {
	// Paths are the member files and devices its path lines and devices= lists name, globs
	// expanded (a pattern that matches nothing names nothing: the device may not be there yet).
	Paths []string
	// Arrays are its ARRAY lines, in file order; empty when it has none (every array found may
	// start).
	Arrays []ConfigArray
}

// ConfigArray is one ARRAY line: the array of UUID, to be assembled as Name.
type ConfigArray struct {
	Name string
	UUID UUID
	// Devices are the devices= patterns; none: any device may be a member.
	Devices []string
	// Line is where it was written, for messages.
	Line int
}

// ErrNoConfig means a configuration file that was asked for by name does not exist.
var ErrNoConfig = errors.New("no such configuration file")

// ReadConfig reads the configuration file at path. A file that does not exist is an empty
// configuration unless required (the file was named by the user): then it is ErrNoConfig.
func ReadConfig(path string, required bool) (Config, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		if required {
			return Config{}, fmt.Errorf("config %s: %w: name an existing file, or leave --config out to use the default (whose absence is no error)", path, ErrNoConfig)
		}
		return Config{}, nil
	}
	if err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	return ParseConfig(f, path)
}

// ParseConfig reads a configuration from r; path names it in errors, each of which gives the
// line and how to write it.
func ParseConfig(r io.Reader, path string) (Config, error) {
	var c Config
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		at := fmt.Sprintf("config %s:%d", path, n)
		if strings.EqualFold(fields[0], "ARRAY") {
			a, err := parseArrayLine(fields[1:], at, n)
			if err != nil {
				return Config{}, err
			}
			if err := c.addArray(a, path); err != nil {
				return Config{}, err
			}
			for _, d := range a.Devices {
				matches, _ := filepath.Glob(d) // checked by parseArrayLine
				c.Paths = append(c.Paths, matches...)
			}
			continue
		}
		p := strings.TrimSpace(line)
		if !filepath.IsAbs(p) {
			return Config{}, fmt.Errorf("%s: %q is neither an absolute path nor an ARRAY line: name each member file or device by its full path (globs allowed), or write ARRAY NAME UUID=... [devices=PATH,...]", at, p)
		}
		matches, err := filepath.Glob(p)
		if err != nil {
			return Config{}, fmt.Errorf("%s: pattern %q: %w: fix the pattern (glob syntax: *, ?, [...])", at, p, err)
		}
		c.Paths = append(c.Paths, matches...)
	}
	if err := sc.Err(); err != nil {
		return Config{}, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

func parseArrayLine(fields []string, at string, n int) (ConfigArray, error) {
	const form = "write ARRAY NAME UUID=... [devices=PATH,...], as uraid examine --scan prints it"
	a := ConfigArray{Line: n}
	if len(fields) == 0 || strings.Contains(fields[0], "=") {
		return a, fmt.Errorf("%s: ARRAY without a name: %s", at, form)
	}
	a.Name = fields[0]
	if err := ValidateName(a.Name); err != nil {
		return a, fmt.Errorf("%s: %w: %s", at, err, form)
	}
	seen := map[string]bool{}
	for _, f := range fields[1:] {
		k, v, ok := strings.Cut(f, "=")
		k = strings.ToLower(k)
		if !ok || v == "" {
			return a, fmt.Errorf("%s: %q is not KEY=VALUE: %s", at, f, form)
		}
		if seen[k] {
			return a, fmt.Errorf("%s: %s= given twice: give it once", at, k)
		}
		seen[k] = true
		switch k {
		case "uuid":
			u, err := ParseUUID(v)
			if err != nil {
				return a, fmt.Errorf("%s: UUID=%s: %w: copy the array UUID from uraid examine --scan", at, v, err)
			}
			a.UUID = u
		case "devices":
			for _, d := range strings.Split(v, ",") {
				if !filepath.IsAbs(d) {
					return a, fmt.Errorf("%s: devices=: %q is not an absolute path: name each member by its full path (globs allowed), separated by commas", at, d)
				}
				if _, err := filepath.Glob(d); err != nil {
					return a, fmt.Errorf("%s: devices=: pattern %q: %w: fix the pattern (glob syntax: *, ?, [...])", at, d, err)
				}
				a.Devices = append(a.Devices, d)
			}
		default:
			return a, fmt.Errorf("%s: unknown key %s=: ARRAY takes UUID= and devices= (%s)", at, k, form)
		}
	}
	if a.UUID.IsZero() {
		return a, fmt.Errorf("%s: ARRAY %s has no UUID=: uraid picks arrays by UUID: %s", at, a.Name, form)
	}
	return a, nil
}

// addArray adds a, refusing a line that contradicts an earlier one. A line that repeats one (same
// name and UUID, as appending uraid examine --scan twice writes) adds its devices to it.
func (c *Config) addArray(a ConfigArray, path string) error {
	for i, b := range c.Arrays {
		switch {
		case a.UUID == b.UUID && a.Name == b.Name:
			c.Arrays[i].Devices = append(c.Arrays[i].Devices, a.Devices...)
			if len(a.Devices) == 0 || len(b.Devices) == 0 {
				c.Arrays[i].Devices = nil // one of the lines allows any device
			}
			return nil
		case a.UUID == b.UUID:
			return fmt.Errorf("config %s:%d: array %s is ARRAY %s on line %d and ARRAY %s here: one array, one name: delete one of the lines",
				path, a.Line, a.UUID, b.Name, b.Line, a.Name)
		case a.Name == b.Name:
			return fmt.Errorf("config %s:%d: ARRAY %s names array %s here and array %s on line %d: two arrays cannot share a name: rename one (uraid examine --scan prints each array's line)",
				path, a.Line, a.Name, a.UUID, b.UUID, b.Line)
		}
	}
	c.Arrays = append(c.Arrays, a)
	return nil
}

// ArrayLine is f's ARRAY line, as ParseConfig reads it. Members that are not block devices (files)
// are listed in devices=, since a scan finds files only through the configuration; block devices
// are found without it, and their names (sdb) may change from one boot to the next.
func ArrayLine(f Found) string {
	s := fmt.Sprintf("ARRAY %s UUID=%s", f.Name, f.UUID)
	var files []string
	for _, m := range f.Members {
		if fi, err := os.Stat(m.Path); err == nil && fi.Mode().IsRegular() {
			p, err := filepath.Abs(m.Path)
			if err != nil {
				p = m.Path
			}
			files = append(files, p)
		}
	}
	if len(files) > 0 {
		s += " devices=" + strings.Join(files, ",")
	}
	return s
}

// Select applies the configuration's ARRAY lines to what a scan found: with none, res as it is;
// with some, only the arrays they list, and of those only the members their devices= allow.
// notListed names the arrays found that no line lists, for a message. An array listed under
// another name than its superblocks carry is refused (in errs): uraid does not rename arrays.
func (c Config) Select(res ScanResult, path string) (sel ScanResult, notListed []Found, errs []error) {
	if len(c.Arrays) == 0 {
		return res, nil, nil
	}
	sel = ScanResult{Unreadable: res.Unreadable}
	for _, f := range res.Arrays {
		i := slices.IndexFunc(c.Arrays, func(a ConfigArray) bool { return a.UUID == f.UUID })
		if i < 0 {
			notListed = append(notListed, f)
			continue
		}
		a := c.Arrays[i]
		if a.Name != f.Name {
			errs = append(errs, fmt.Errorf("array %s (%s): not assembled: config %s:%d names it %s, but its members call it %s: uraid does not rename arrays: write ARRAY %s UUID=%s",
				f.Name, f.UUID, path, a.Line, a.Name, f.Name, f.Name, f.UUID))
			continue
		}
		if len(a.Devices) > 0 {
			f.Members = slices.DeleteFunc(slices.Clone(f.Members), func(m MemberSB) bool { return !a.allows(m.Path) })
			if len(f.Members) == 0 {
				continue
			}
		}
		sel.Arrays = append(sel.Arrays, f)
	}
	return sel, notListed, errs
}

// allows reports whether path (or the file it links to) matches one of a's devices= patterns.
func (a ConfigArray) allows(path string) bool {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		real = path
	}
	for _, d := range a.Devices {
		matches, _ := filepath.Glob(d)
		for _, m := range matches {
			if m == path {
				return true
			}
			if r, err := filepath.EvalSymlinks(m); err == nil && r == real {
				return true
			}
		}
	}
	return false
}
