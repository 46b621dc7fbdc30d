// Package testutil holds what the tests of several packages share: waiting for a state
// (WaitFor, WaitForWithin, WaitForNoError) or for a value on a channel (Receive), under one
// generous bound, Patience; the bytes files hold (Allocated); scratch files and directories
// (SparseFile, TmpfsDir, MemDir); a TestMain for rapid's property tests (RapidMain); a virtual
// clock the test holds (PausingClock); the gate of the tests over FUSE disks (NeedFUSE).
//
// It is for _test.go files only: product code must not import it, nor its subpackages
// (TestOnlyTestsImportTestutil checks).
//
// Of the project it imports internal/clock alone, so that the tests of every other package
// can use it; helpers that need more live in subpackages: ublktest (requests through a
// ublk.Harness), raidtest (a member file's superblock) and gosrc (a package type-checked from its
// source).
package testutil
