// Package bytesize writes byte counts for people: the one format every human-readable view of
// uraid uses (status, detail, examine, progress, error messages), so that a size reads the same
// wherever it appears and can be given back to a flag that takes a size (512K, 2046M).
// It is pure and safe for concurrent use.
package bytesize
