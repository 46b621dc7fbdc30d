// Package testutil holds what the tests of several packages share: waiting for a state,
// the bytes a file holds, scratch files and directories, a rapid TestMain, a virtual
// clock the test holds. It is for _test.go files only: product code must not import it
// (TestOnlyTestsImportTestutil checks), nor its subpackages.
//
// Of the project it imports internal/clock alone, so that the tests of every other package
// can use it; helpers that need more live in subpackages: ublktest (requests through a
// ublk.Harness) and gosrc (a package type-checked from its source).
package testutil
